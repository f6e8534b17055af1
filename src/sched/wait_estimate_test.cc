#include "sched/wait_estimate.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd::sched {
namespace {

TEST(WaitEstimate, NothingMeasuredNothingKnown) {
  const WaitEstimate e = EstimateWait({}, 10, 10, 4, 100);
  EXPECT_FALSE(e.known);
  EXPECT_EQ(e.first_token_ms(), 0);
}

TEST(WaitEstimate, RoomNowMeansOnlyThePrefill) {
  const WaitEstimate e = EstimateWait({.slot_hold_ms = 2000, .prefill_ms_per_token = 2.5}, 2, 1, 4, 40);
  EXPECT_TRUE(e.known);
  EXPECT_EQ(e.ahead, 3u);
  EXPECT_EQ(e.queue_ms, 0);
  EXPECT_EQ(e.prefill_ms, 100);
}

TEST(WaitEstimate, EachFullRoundAheadCostsAHoldTime) {
  const MeasuredCosts costs{.slot_hold_ms = 1000, .prefill_ms_per_token = 1};
  EXPECT_EQ(EstimateWait(costs, 4, 0, 4, 10).queue_ms, 1000);   // every slot busy: one round
  EXPECT_EQ(EstimateWait(costs, 4, 3, 4, 10).queue_ms, 1000);   // 7 ahead, 4 at a time
  EXPECT_EQ(EstimateWait(costs, 4, 4, 4, 10).queue_ms, 2000);
  EXPECT_EQ(EstimateWait(costs, 4, 4, 4, 10).first_token_ms(), 2010);
}

TEST(WaitEstimate, RoughTokensCountTheTextToPrefill) {
  EXPECT_EQ(RoughPromptTokens(RawCompletion{std::string(400, 'x')}), 101u);
  EXPECT_EQ(RoughPromptTokens(OneShotChat{std::string(40, 's'), std::string(40, 'u')}), 21u);
  EXPECT_EQ(RoughPromptTokens(SessionTurn{"s", std::string(4000, 's'), std::string(8, 'u')}), 3u);
}

TEST(WaitEstimate, TheRefusalGivesTheExpectedWait) {
  const Status s = DeadlineUnmeetableError({.known = true, .ahead = 5, .queue_ms = 900, .prefill_ms = 100}, 500);
  EXPECT_EQ(s.reason(), ErrorReason::kDeadlineUnmeetable);
  EXPECT_NE(s.message().find("expected in about 1000 ms (5 requests ahead), after the deadline of 500 ms"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace llmd::sched
