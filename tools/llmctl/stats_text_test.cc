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

TEST(DroppedLine, SaysTurnsAndTokens) {
  EXPECT_EQ(DroppedLine(1, 130), "dropped the oldest 1 turn (130 tokens) to fit the context");
  EXPECT_EQ(DroppedLine(2, 310), "dropped the oldest 2 turns (310 tokens) to fit the context");
}

TEST(ClientTable, OneLinePerUidAndClassUnderAHeader) {
  ServerStats::Client bg{.uid = "1000", .request_class = "background", .requests = 5, .refused_budget = 2,
                         .refused_queue_full = 1, .queue_wait_ms = 7.5f, .ttft_ms = 96.0f, .prompt_tokens = 400,
                         .cached_tokens = 100, .generated_tokens = 64, .preemptions = 1};
  ServerStats::Client other{.uid = "other", .request_class = "normal", .requests = 1};
  EXPECT_EQ(ClientTable({bg, other}),
            "uid      class        requests  refused over budget   queue ms   ttft ms   prompt   cached generated preempted\n"
            "1000     background          5        3           2        7.5      96.0      400      100        64         1\n"
            "other    normal              1        0           0        0.0       0.0        0        0         0         0\n");
  EXPECT_EQ(ClientTable({}), "no client has sent a request yet\n");
}

}  // namespace
}  // namespace llmd::llmctl
