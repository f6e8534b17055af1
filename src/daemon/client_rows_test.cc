#include "daemon/client_rows.h"

#include <gtest/gtest.h>

namespace llmd::daemon {
namespace {

TEST(ClientRows, SumsBecomeMeansAndCountersAreClamped) {
  sched::ClientRow row{.uid = "1000", .request_class = RequestClass::kBackground};
  row.counters.requests = 5;
  row.counters.refusals = {2, 1, 0, 3};
  row.counters.queue_wait_ms_sum = 30;
  row.counters.queue_waits = 4;
  row.counters.prompt_tokens = uint64_t{1} << 40;
  row.counters.generated_tokens = 64;
  row.counters.preemptions = 1;
  const std::vector<proto::ClientStats> out = ClientRows({row});
  ASSERT_EQ(out.size(), 1u);
  const proto::ClientStats& c = out[0];
  EXPECT_EQ(c.uid, "1000");
  EXPECT_EQ(c.request_class, 2);
  EXPECT_EQ(c.requests, 5u);
  EXPECT_EQ(c.refused_budget, 2u);
  EXPECT_EQ(c.refused_queue_full, 1u);
  EXPECT_EQ(c.refused_busy, 0u);
  EXPECT_EQ(c.refused_deadline, 3u);
  EXPECT_FLOAT_EQ(c.queue_wait_ms, 7.5f);
  EXPECT_FLOAT_EQ(c.ttft_ms, 0.0f) << "no first token timed: 0, not 0/0";
  EXPECT_EQ(c.prompt_tokens, UINT32_MAX);
  EXPECT_EQ(c.generated_tokens, 64u);
  EXPECT_EQ(c.preemptions, 1u);
}

}  // namespace
}  // namespace llmd::daemon
