#include "sched/rate_limiter.h"

#include <gtest/gtest.h>

namespace llmd::sched {
namespace {

TEST(RateLimiter, AllowsABurstThenThrottlesPerUid) {
  ManualClock clock;
  RateLimiter limiter(100, clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(limiter.Acquire(1000), 0) << i;
  int64_t wait = limiter.Acquire(1000);
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, 10);
  EXPECT_EQ(limiter.Acquire(1001), 0) << "another UID has its own bucket";
  clock.Advance(10);
  EXPECT_EQ(limiter.Acquire(1000), 0) << "refilled at 100/s";
}

TEST(RateLimiter, LongIdleNeverOverflowsTheBucket) {
  ManualClock clock;
  RateLimiter limiter(100, clock);
  clock.Advance(int64_t{1} << 50);  // ~35,000 years
  for (int i = 0; i < 100; ++i) ASSERT_EQ(limiter.Acquire(7), 0);
  EXPECT_GT(limiter.Acquire(7), 0) << "capped at one second's burst";
}

}  // namespace
}  // namespace llmd::sched
