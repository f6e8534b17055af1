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

}  // namespace
}  // namespace llmd
