#include "common/log.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd {
namespace {

TEST(Log, LinesBelowTheLevelAreNeitherWrittenNorEnabled) {
  SetLogLevel(LogLevel::kInfo);
  EXPECT_FALSE(LogEnabled(LogLevel::kDebug));
  EXPECT_TRUE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kDebug, "hidden_event");
  Log(LogLevel::kInfo, "shown_event", {{"key", "value"}});
  std::string out = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find("hidden_event"), std::string::npos) << out;
  EXPECT_NE(out.find("info shown_event key=value"), std::string::npos) << out;

  SetLogLevel(LogLevel::kDebug);
  EXPECT_TRUE(LogEnabled(LogLevel::kDebug));
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kDebug, "now_shown");
  out = ::testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_NE(out.find("debug now_shown"), std::string::npos) << out;
}

TEST(LogRateLimiter, ABurstPassesWholeThenOneLineAnIntervalAndTheDroppedAreCounted) {
  LogRateLimiter limiter(50, 3);
  long suppressed = -1;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.AllowAt(1000, &suppressed)) << i;
  EXPECT_EQ(suppressed, 0);
  EXPECT_FALSE(limiter.AllowAt(1000, &suppressed));
  EXPECT_FALSE(limiter.AllowAt(1049, &suppressed));
  EXPECT_TRUE(limiter.AllowAt(1050, &suppressed));  // one line refilled in 50 ms
  EXPECT_EQ(suppressed, 2);
  EXPECT_FALSE(limiter.AllowAt(1060, &suppressed));
  // A long quiet refills the burst, never more.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.AllowAt(60000, &suppressed)) << i;
  EXPECT_FALSE(limiter.AllowAt(60000, &suppressed));
}

TEST(LogRateLimiter, WithoutABurstItIsOneLineAnInterval) {
  LogRateLimiter limiter(1000);
  long suppressed = 0;
  EXPECT_TRUE(limiter.AllowAt(5, &suppressed));
  EXPECT_FALSE(limiter.AllowAt(500, &suppressed));
  EXPECT_TRUE(limiter.AllowAt(1005, &suppressed));
  EXPECT_EQ(suppressed, 1);
}

}  // namespace
}  // namespace llmd
