// The per-client ledger: what it counts for each (UID, class), and the bounded label set.
#include "sched/client_ledger.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd::sched {
namespace {

engine::GenerationStats Ran(double queue_ms, double ttft_ms, int generated, int preemptions = 0) {
  engine::GenerationStats st;
  st.prompt_tokens = 40;
  st.cached_tokens = 10;
  st.queue_ms = queue_ms;
  st.ttft_ms = ttft_ms;
  st.generated_tokens = generated;
  st.preemptions = preemptions;
  return st;
}

TEST(ClientLedger, CountsRequestsRefusalsWaitsAndTokensPerUidAndClass) {
  ClientLedger ledger;
  const ClientId bg{1000, RequestClass::kBackground};
  for (int i = 0; i < 3; ++i) ledger.CountRequest(bg);
  ledger.CountRefusal(bg, Refusal::kBudget);
  ledger.CountRun(bg, Ran(20, 100, 8, 2));
  ledger.CountRun(bg, Ran(40, 0, 0));  // generated nothing: no first token to time
  ledger.CountRequest({1000, RequestClass::kInteractive});

  const std::vector<ClientRow> rows = ledger.Snapshot();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].uid, "1000");
  EXPECT_EQ(rows[0].request_class, RequestClass::kInteractive) << "by class within a UID";
  EXPECT_EQ(rows[0].counters.requests, 1u);
  const ClientCounters& c = rows[1].counters;
  EXPECT_EQ(rows[1].request_class, RequestClass::kBackground);
  EXPECT_EQ(c.requests, 3u);
  EXPECT_EQ(c.refusals[static_cast<size_t>(Refusal::kBudget)], 1u);
  EXPECT_EQ(c.refused(), 1u);
  EXPECT_EQ(c.queue_waits, 2u);
  EXPECT_DOUBLE_EQ(c.queue_wait_ms_sum, 60);
  EXPECT_EQ(c.ttfts, 1u);
  EXPECT_DOUBLE_EQ(c.ttft_ms_sum, 100);
  EXPECT_EQ(c.prompt_tokens, 80u);
  EXPECT_EQ(c.cached_tokens, 20u);
  EXPECT_EQ(c.generated_tokens, 8u);
  EXPECT_EQ(c.preemptions, 2u);
}

// A cancelled request's tokens were spent, but its times are those of no answer.
TEST(ClientLedger, ACancelledRunCountsItsTokensNotItsTimes) {
  ClientLedger ledger;
  engine::GenerationStats st = Ran(500, 700, 5);
  st.finish_reason = engine::FinishReason::kCancelled;
  ledger.CountRun({7, RequestClass::kNormal}, st);
  const ClientCounters c = ledger.Snapshot().at(0).counters;
  EXPECT_EQ(c.generated_tokens, 5u);
  EXPECT_EQ(c.queue_waits, 0u);
  EXPECT_EQ(c.ttfts, 0u);
}

// Sixteen UIDs by number, every later one under "other", unidentified peers under "unknown",
// in that order: at most 18 UID labels, whatever the peers do.
TEST(ClientLedger, TheLabelSetIsBounded) {
  ClientLedger ledger;
  for (uint32_t uid = 100; uid < 140; ++uid) ledger.CountRequest({uid, RequestClass::kNormal});
  ledger.CountRequest({std::nullopt, RequestClass::kNormal});
  ledger.CountRequest({105, RequestClass::kNormal});  // a named UID stays named
  ledger.CountRequest({139, RequestClass::kNormal});  // a later one stays other

  const std::vector<ClientRow> rows = ledger.Snapshot();
  ASSERT_EQ(rows.size(), ClientLedger::kMaxNamedUids + 2);
  EXPECT_EQ(rows[0].uid, "100");
  EXPECT_EQ(rows[5].uid, "105");
  EXPECT_EQ(rows[5].counters.requests, 2u);
  EXPECT_EQ(rows[15].uid, "115");
  EXPECT_EQ(rows[16].uid, "other");
  EXPECT_EQ(rows[16].counters.requests, 40u - 16u + 1u);
  EXPECT_EQ(rows[17].uid, "unknown");
  EXPECT_EQ(rows[17].counters.requests, 1u);
}

TEST(ClientLedger, RefusalNames) {
  EXPECT_STREQ(RefusalName(Refusal::kBudget), "budget");
  EXPECT_STREQ(RefusalName(Refusal::kQueueFull), "queue_full");
  EXPECT_STREQ(RefusalName(Refusal::kBusy), "busy");
  EXPECT_STREQ(RefusalName(Refusal::kDeadline), "deadline");
}

}  // namespace
}  // namespace llmd::sched
