#include "tools/llmctl/stats_text.h"

#include <gtest/gtest.h>

namespace llmd::llmctl {
namespace {

TEST(DraftLine, SaysTheRateOnlyWhenSomethingWasDrafted) {
  EXPECT_EQ(DraftLine(0, 0), "speculative: 0 drafted, 0 accepted (-)");
  EXPECT_EQ(DraftLine(120, 84), "speculative: 120 drafted, 84 accepted (70.0%)");
  EXPECT_EQ(DraftLine(3, 0), "speculative: 3 drafted, 0 accepted (0.0%)");
  EXPECT_FALSE(DraftAcceptanceRate(0, 0).has_value());
  EXPECT_DOUBLE_EQ(DraftAcceptanceRate(8, 6).value(), 0.75);
}

}  // namespace
}  // namespace llmd::llmctl
