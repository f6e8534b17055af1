#include "common/duration.h"

#include <gtest/gtest.h>

namespace llmd {
namespace {

TEST(Duration, ReadsBareSecondsAndUnits) {
  EXPECT_EQ(*ParseDurationMs("300"), 300000);
  EXPECT_EQ(*ParseDurationMs("1.5"), 1500);
  EXPECT_EQ(*ParseDurationMs("0"), 0);
  EXPECT_EQ(*ParseDurationMs("90s"), 90000);
  EXPECT_EQ(*ParseDurationMs("500ms"), 500);
  EXPECT_EQ(*ParseDurationMs("5m"), 300000);
  EXPECT_EQ(*ParseDurationMs("1h30m"), 5400000);
  EXPECT_EQ(*ParseDurationMs("2h0m10s"), 7210000);
  EXPECT_EQ(*ParseDurationMs("-1"), -1000);
  EXPECT_EQ(*ParseDurationMs("-1m"), -60000);
  EXPECT_EQ(*ParseDurationMs("+10s"), 10000);
}

TEST(Duration, RefusesWhatIsNotADurationAndSaysWhy) {
  for (const char* bad : {"", "-", "m", "5x", "5 m", "1.2.3s", "5m3", "ms5", "1e3", "99999999999999h"}) {
    auto r = ParseDurationMs(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message().find("is not a duration"), std::string::npos) << r.error().message();
  }
}

TEST(Duration, FormatsWhatItReadsBack) {
  for (int64_t ms : {0LL, 500LL, 1000LL, 90000LL, 300000LL, 5400000LL, 7210000LL, -60000LL, 1500LL}) {
    EXPECT_EQ(*ParseDurationMs(FormatDurationMs(ms)), ms) << FormatDurationMs(ms);
  }
  EXPECT_EQ(FormatDurationMs(300000), "5m");
  EXPECT_EQ(FormatDurationMs(5400000), "1h30m");
}

}  // namespace
}  // namespace llmd
