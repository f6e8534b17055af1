// An exact repeat of a prompt (a "regenerate", a retried request) on attention memory that
// still holds it: its first token is sampled from the logits the prompt's last token gave,
// kept with the slot (Engine::KeepOutput), so no prompt token is decoded again. Where the
// memory holds the prompt as another prompt computed it, or cannot be cut back to it
// (recurrent state), the last token is decoded again. Every answer is the job's solo one.
// Stated in what the jobs report and what the fake engine decoded, never in time.
#include <gtest/gtest.h>

#include <string>

#include "engine/fake_engine.h"
#include "sched/engine_worker.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): test helpers

// The prompt tokens the engine decoded in batches after the first `from`.
size_t PromptItemsAfter(const Batches& batches, size_t from) {
  size_t n = 0;
  for (size_t b = from; b < batches.size(); ++b) {
    for (const DecodeItem& item : batches[b]) n += item.prompt_tokens > 0;
  }
  return n;
}

TEST(EngineWorkerRepeat, AnExactRepeatSamplesFromTheKeptLogitsAndDecodesNoPromptToken) {
  // 16: prompt rows follow the kernels of their cold micro-batch (prompt_call_tokens), as on
  // llama.cpp's dense models.
  for (const int32_t piece : {0, 16}) {
    const FakeEngineOptions options{.prompt_call_tokens = piece};
    Rig rig(options);
    auto job = [] { return Chat("Be brief.", "Name a colour.", 8); };  // each with a channel of its own
    auto first = rig.Run(job());
    ASSERT_TRUE(first.has_value()) << first.error().ToString();
    const size_t batches_before = rig.fake->batches().size();
    const int64_t prompt_decoded = rig.fake->prompt_tokens_decoded();

    auto again = rig.Run(job());
    ASSERT_TRUE(again.has_value()) << again.error().ToString();
    EXPECT_EQ(again->stats.cached_tokens, again->stats.prompt_tokens) << "piece " << piece;
    EXPECT_EQ(PromptItemsAfter(rig.fake->batches(), batches_before), 0u) << "piece " << piece;
    EXPECT_EQ(rig.fake->prompt_tokens_decoded(), prompt_decoded) << "piece " << piece;
    EXPECT_EQ(again->stats.prefill_step, 0u) << "no step prefilled it";
    EXPECT_EQ(again->tokens, first->tokens);
    EXPECT_EQ(again->tokens, Solo(job(), options));
  }
}

// The first token comes from the kept logits: a job of one token decodes nothing at all.
TEST(EngineWorkerRepeat, ARepeatOfOneTokenEndsWithoutADecode) {
  Rig rig;
  auto first = rig.Run(Raw("one token please", 1));
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  const size_t batches_before = rig.fake->batches().size();
  auto again = rig.Run(Raw("one token please", 1));
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(rig.fake->batches().size(), batches_before);
  EXPECT_EQ(again->stats.finish_reason, FinishReason::kLength);
  EXPECT_EQ(again->tokens, first->tokens);
}

// Sent again while the first is still generating: the repeat lands on another slot, copies
// the memory and the kept logits with it, and both give their solo tokens. (A copy is made
// for min_shared_prefix tokens or more: the prompt is longer.)
TEST(EngineWorkerRepeat, ARepeatBesideItsRunningTwinCopiesItsMemoryAndLogits) {
  Rig rig;
  auto job = [] { return Chat(std::string(100, 's'), "Count to ten in words.", 12); };
  const auto done = rig.RunInWaves({{job()}, {job()}}, {2});
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].stats.cached_tokens, done[1].stats.prompt_tokens);
  EXPECT_EQ(rig.worker->stats().prefix_copies, 1u);
  const auto solo = Solo(job());
  EXPECT_EQ(done[0].tokens, solo);
  EXPECT_EQ(done[1].tokens, solo);
}

// Twins admitted together (`n` choices of one request): one prefills the prompt, the other
// waits for it and copies its memory and the logits of its last token, and starts generating
// from them.
TEST(EngineWorkerRepeat, TwinsAdmittedTogetherPrefillTheirPromptOnce) {
  Rig rig;
  auto job = [] { return Chat(std::string(100, 's'), "Count to ten in words.", 12); };
  const auto done = rig.RunInWaves({{job(), job()}}, {});
  ASSERT_EQ(done.size(), 2u);
  const auto prompt = static_cast<int64_t>(done[0].stats.prompt_tokens);
  EXPECT_EQ(done[0].stats.cached_tokens, 0);
  EXPECT_EQ(done[1].stats.cached_tokens, prompt);
  EXPECT_EQ(rig.fake->prompt_tokens_decoded(), prompt);
  const auto solo = Solo(job());
  EXPECT_EQ(done[0].tokens, solo);
  EXPECT_EQ(done[1].tokens, solo);
}

// The slot's last job was a longer prompt that starts with this one: its memory holds these
// tokens as that prompt computed them, and no logits of this prompt's end. The repeat
// decodes its last token again.
TEST(EngineWorkerRepeat, AfterALongerPromptOnTheSlotTheLastTokenIsDecodedAgain) {
  Rig rig(FakeEngineOptions{.sequences = 1});
  auto short_job = [] { return Raw("hello there", 4); };
  ASSERT_TRUE(rig.Run(short_job()).has_value());
  ASSERT_TRUE(rig.Run(Raw("hello there, and more", 4)).has_value());
  const size_t batches_before = rig.fake->batches().size();
  auto again = rig.Run(short_job());
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_EQ(again->stats.cached_tokens, again->stats.prompt_tokens - 1);
  EXPECT_EQ(PromptItemsAfter(rig.fake->batches(), batches_before), 1u);
  EXPECT_EQ(again->tokens, Solo(short_job(), FakeEngineOptions{.sequences = 1}));
}

// Recurrent memory cannot be cut back to the prompt's end once it generated: the repeat
// restores the checkpoint before the last token and decodes that token again.
TEST(EngineWorkerRepeat, OnRecurrentMemoryTheLastTokenIsDecodedAgain) {
  const FakeEngineOptions options{.memory = FakeMemory::kRecurrent};
  Rig rig(options);
  auto job = [] { return Chat("Be brief.", "Name a colour.", 8); };
  ASSERT_TRUE(rig.Run(job()).has_value());
  auto again = rig.Run(job());
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_LT(again->stats.cached_tokens, again->stats.prompt_tokens);
  EXPECT_EQ(again->tokens, Solo(job(), options));
}

}  // namespace
}  // namespace llmd::sched
