// Speculative decoding through the real daemon: the config keys reach the engine (a draft
// model, the model's own MTP layer), the native Done frame and Stats carry the draft counters,
// a request can turn it off, and the benchmark-only synthetic acceptance is refused without
// --benchmark.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"

namespace llmd::testing {
namespace {

GenerateOptions Greedy(uint32_t max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.temperature = 0.0f;
  return o;
}

Generation Ask(const DaemonProcess& d, const std::string& prompt, const GenerateOptions& o) {
  auto g = LlmClient(d.socket(), std::chrono::seconds(120)).GenerateStream(prompt, o, nullptr);
  EXPECT_TRUE(g.has_value()) << g.error().ToString();
  return g.has_value() ? *g : Generation();
}

TEST(DaemonSpeculative, ADraftModelGivesTheSameTextAndCountsItsDrafts) {
  DaemonProcess plain;
  ASSERT_TRUE(plain.ready()) << plain.log();
  // The tiny model drafting for itself: its guesses are the target's own.
  DaemonProcess spec({"--speculative", "draft", "--draft-model", TinyModelPath(), "--draft-max", "4"});
  ASSERT_TRUE(spec.ready()) << spec.log();
  const Generation a = Ask(plain, "Count with me", Greedy(32));
  const Generation b = Ask(spec, "Count with me", Greedy(32));
  EXPECT_EQ(b.text, a.text);
  EXPECT_EQ(a.draft_tokens, 0u);
  EXPECT_GT(b.draft_tokens, 0u);
  EXPECT_GT(b.accepted_draft_tokens, 0u);
  auto stats = LlmClient(spec.socket()).Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->draft_tokens, b.draft_tokens);
  EXPECT_EQ(stats->accepted_draft_tokens, b.accepted_draft_tokens);

  GenerateOptions off = Greedy(32);
  off.draft_max = 0;  // this request only
  const Generation c = Ask(spec, "Count with me", off);
  EXPECT_EQ(c.text, a.text);
  EXPECT_EQ(c.draft_tokens, 0u);
}

TEST(DaemonSpeculative, SyntheticAcceptanceNeedsTheBenchmarkFlag) {
  DaemonProcess refused({"--speculative", "draft", "--draft-model", TinyModelPath(), "--spec-synth-len", "2.5"});
  EXPECT_FALSE(refused.ready());
  EXPECT_NE(refused.log().find("--spec-synth-len is for benchmarks only"), std::string::npos) << refused.log();

  DaemonProcess bench({"--speculative", "draft", "--draft-model", TinyModelPath(), "--draft-max", "4",
                       "--spec-synth-len", "5", "--benchmark"});
  ASSERT_TRUE(bench.ready()) << bench.log();
  // Length 5 with 4 drafted: every draft token is taken, whatever the target says.
  const Generation g = Ask(bench, "Anything", Greedy(21));
  EXPECT_GT(g.draft_tokens, 0u);
  EXPECT_EQ(g.accepted_draft_tokens, g.draft_tokens);
}

TEST(DaemonSpeculative, TheModelsOwnMtpLayerDraftsAndTheTextStaysTheSame) {
  DaemonProcess plain({}, Qwen35TinyMtpPath());
  ASSERT_TRUE(plain.ready()) << plain.log();
  DaemonProcess mtp({"--speculative", "mtp", "--draft-max", "3"}, Qwen35TinyMtpPath());
  ASSERT_TRUE(mtp.ready()) << mtp.log();
  const Generation a = Ask(plain, "Count with me", Greedy(32));
  const Generation b = Ask(mtp, "Count with me", Greedy(32));
  EXPECT_EQ(b.text, a.text);
  EXPECT_EQ(a.draft_tokens, 0u);
  EXPECT_GT(b.draft_tokens, 0u);
}

TEST(DaemonSpeculative, MtpWithoutAnMtpLayerStopsTheDaemonWithAClearError) {
  DaemonProcess d({"--speculative", "mtp"}, Qwen35TinyPath());
  EXPECT_FALSE(d.ready());
  EXPECT_NE(d.log().find("needs a model with a multi-token-prediction layer"), std::string::npos) << d.log();
}

TEST(DaemonSpeculative, AnUnusableDraftModelStopsTheDaemonWithAClearError) {
  DaemonProcess d({"--speculative", "draft", "--draft-model", Qwen35TinyPath()});
  EXPECT_FALSE(d.ready());
  EXPECT_NE(d.log().find("attention-only"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace llmd::testing
