// The token buckets of class_token_budgets on a ManualClock: a minute's tokens to start with,
// refilled by the rate, charged after the fact, and a retry-after that is what the bucket says.
#include "sched/token_budget.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace llmd::sched {
namespace {

constexpr ClientId kAlice{1000, RequestClass::kBackground};

TEST(TokenBudgets, NoBudgetNeverRefuses) {
  TokenBudgets budgets;
  budgets.Charge(kAlice, 1000000, /*per_minute=*/0, 0);
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 0, 0), 0);
}

TEST(TokenBudgets, AFullBucketAllowsUntilChargedBelowOneToken) {
  ManualClock clock;
  TokenBudgets budgets;
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 0) << "a new bucket holds a minute's tokens";
  budgets.Charge(kAlice, 599, 600, clock.NowMs());
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 0) << "one token left";
  budgets.Charge(kAlice, 1, 600, clock.NowMs());
  // 600 a minute is one token each 100 ms: empty, the next token is 100 ms away.
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 100);
}

// A request that cost more than the bucket held leaves a debt, and the wait is the time to
// pay it back and hold one token: exactly what the rate says.
TEST(TokenBudgets, TheRetryAfterIsWhatTheBucketSays) {
  ManualClock clock;
  TokenBudgets budgets;
  // 60000 a minute: one token a millisecond.
  budgets.Charge(kAlice, 60000 + 299, 60000, clock.NowMs());  // 299 owed
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 60000, clock.NowMs()), 300);
  clock.Advance(299);
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 60000, clock.NowMs()), 1) << "at zero: one token to go";
  clock.Advance(1);
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 60000, clock.NowMs()), 0);
}

TEST(TokenBudgets, ABucketRefillsByTheRateUpToAMinutesWorth) {
  ManualClock clock;
  TokenBudgets budgets;
  budgets.Charge(kAlice, 600, 600, clock.NowMs());  // empty
  clock.Advance(60000 * 5);                         // five minutes idle: still one minute's worth
  budgets.Charge(kAlice, 600, 600, clock.NowMs());
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 100) << "refilled to 600, not 3000";
  clock.Advance(1000);  // 10 tokens back
  budgets.Charge(kAlice, 9, 600, clock.NowMs());
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 0);
}

// Buckets are per UID and per class; peers of no known UID share one.
TEST(TokenBudgets, EachUidAndClassHasItsOwnBucket) {
  ManualClock clock;
  TokenBudgets budgets;
  budgets.Charge(kAlice, 600, 600, clock.NowMs());
  EXPECT_GT(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 0);
  EXPECT_EQ(budgets.RetryAfterMs({1001, RequestClass::kBackground}, 600, clock.NowMs()), 0) << "another UID";
  EXPECT_EQ(budgets.RetryAfterMs({1000, RequestClass::kNormal}, 600, clock.NowMs()), 0) << "another class";
  const ClientId unknown{std::nullopt, RequestClass::kBackground};
  budgets.Charge(unknown, 600, 600, clock.NowMs());
  EXPECT_GT(budgets.RetryAfterMs(ClientId{std::nullopt, RequestClass::kBackground}, 600, clock.NowMs()), 0)
      << "every unidentified peer draws on the one bucket";
}

// A bucket that has refilled is as good as new, so many UIDs leave no trace past a bound.
TEST(TokenBudgets, RefilledBucketsAreDroppedPastTheBound) {
  ManualClock clock;
  TokenBudgets budgets;
  for (uint32_t uid = 0; uid <= TokenBudgets::kPruneAbove + 10; ++uid) {
    budgets.Charge({uid, RequestClass::kNormal}, 600, 600, clock.NowMs());
  }
  budgets.Charge(kAlice, 900, 600, clock.NowMs());
  EXPECT_EQ(budgets.size(), TokenBudgets::kPruneAbove + 12);
  clock.Advance(60000);  // every bucket but Alice's has refilled
  EXPECT_EQ(budgets.RetryAfterMs({1, RequestClass::kNormal}, 600, clock.NowMs()), 0);
  EXPECT_EQ(budgets.size(), 2u) << "Alice's, and the one just asked for";
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 0) << "300 tokens back after the debt of 300";
  budgets.Charge(kAlice, 300, 600, clock.NowMs());
  EXPECT_EQ(budgets.RetryAfterMs(kAlice, 600, clock.NowMs()), 100) << "a bucket in use is kept";
}

TEST(TokenBudgets, TheRefusalSaysWhenToRetry) {
  const Status s = BudgetExhaustedError(kAlice, 20000, 12001);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.reason(), ErrorReason::kBudgetExhausted);
  EXPECT_EQ(s.retry_after_ms(), 12001);
  EXPECT_EQ(s.message(), "the background token budget of uid 1000 (20000 tokens a minute) is spent; retry after 13 s");
  EXPECT_NE(BudgetExhaustedError({std::nullopt, RequestClass::kNormal}, 5, 1).message().find("peers of no known uid"),
            std::string::npos);
}

}  // namespace
}  // namespace llmd::sched
