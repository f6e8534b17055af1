// The engine worker's memory over time, on the fake engine: the working memory released when
// idle (and a job's keep_alive), and the pinned prefixes that outlive a release. Stated in
// what the worker and the engine hold, on a ManualClock; the only timeouts are liveness bounds.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "engine/fake_engine.h"
#include "sched/engine_worker.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): test helpers

// --- Idle release of the working memory.

WorkerOptions IdleReleaseOptions(int64_t after_ms) {
  WorkerOptions options = TestOptions();
  options.idle_release_after_ms = after_ms;
  options.idle_heartbeat = std::chrono::milliseconds(1);  // the idle loop looks often
  return options;
}

// Polls until `done` holds (a liveness bound, not a timing claim).
template <typename F>
bool Eventually(F done) {
  return llmd::testing::WaitFor(done);
}

// The idle time starts when a job has left the worker, which may be just after its final
// event; the tests move the clock only after that.
void AwaitIdle(const EngineWorker& worker) {
  ASSERT_TRUE(Eventually([&] { return worker.stats().active == 0; }));
}

TEST(EngineWorker, AnIdleEngineReleasesItsWorkingMemoryAndTheNextJobRecomputesItsWholePrompt) {
  for (FakeMemory memory : {FakeMemory::kAttention, FakeMemory::kRecurrent}) {
    SCOPED_TRACE(memory == FakeMemory::kAttention ? "attention" : "recurrent");
    Rig rig({.memory = memory}, IdleReleaseOptions(60000));
    auto first = rig.Run(Chat("system prompt", "question", 6));
    ASSERT_TRUE(first.has_value()) << first.error().ToString();
    EXPECT_TRUE(rig.worker->stats().memory.working_memory);
    EXPECT_GT(rig.worker->stats().memory.kv.resident, 0u);
    EXPECT_EQ(rig.fake->working_memory_releases(), 0);

    AwaitIdle(*rig.worker);
    rig.clock.Advance(60000);
    ASSERT_TRUE(Eventually([&] { return rig.worker->stats().working_memory_releases == 1; }));
    EXPECT_EQ(rig.fake->working_memory_releases(), 1);
    const WorkerStats released = rig.worker->stats();
    EXPECT_FALSE(released.memory.working_memory);
    EXPECT_EQ(released.memory.kv.resident, 0u);
    EXPECT_EQ(released.checkpoints, 0u);  // the checkpoints went with the memory they describe

    // The same request after the release: nothing cached, every prompt token decoded again,
    // the same tokens out.
    const int64_t decoded_before = rig.fake->prompt_tokens_decoded();
    auto again = rig.Run(Chat("system prompt", "question", 6));
    ASSERT_TRUE(again.has_value()) << again.error().ToString();
    EXPECT_EQ(again->tokens, first->tokens);
    EXPECT_EQ(again->stats.cached_tokens, 0);
    EXPECT_EQ(rig.fake->prompt_tokens_decoded() - decoded_before,
              static_cast<int64_t>(ChatTokens("system prompt", "question").size()));
    EXPECT_TRUE(Eventually([&] { return rig.worker->stats().memory.working_memory; }));
    EXPECT_EQ(rig.fake->working_memory_releases(), 1);  // idle time starts again from this job
  }
}

TEST(EngineWorker, AJobsKeepAliveReplacesTheIdleTimeAfterIt) {
  Rig rig({}, IdleReleaseOptions(-1));  // never, unless a job says otherwise
  Job keep = Chat("system prompt", "question", 4);
  keep.keep_alive_ms = 0;  // Ollama's keep_alive 0: free the memory as soon as it is idle
  ASSERT_TRUE(rig.Run(std::move(keep)).has_value());
  ASSERT_TRUE(Eventually([&] { return rig.worker->stats().working_memory_releases == 1; }));

  Job later = Chat("system prompt", "question", 4);
  later.keep_alive_ms = 5000;
  ASSERT_TRUE(rig.Run(std::move(later)).has_value());
  EXPECT_TRUE(Eventually([&] { return rig.worker->stats().memory.working_memory; }));
  AwaitIdle(*rig.worker);
  rig.clock.Advance(5000);
  ASSERT_TRUE(Eventually([&] { return rig.worker->stats().working_memory_releases == 2; }));
}

TEST(EngineWorker, ASessionContinuesAfterAnIdleReleaseFromItsSavedTokens) {
  Rig rig({}, IdleReleaseOptions(1000));
  ASSERT_TRUE(rig.Run(Turn("s1", "system", "first question", 5)).has_value());
  AwaitIdle(*rig.worker);
  rig.clock.Advance(1000);
  ASSERT_TRUE(Eventually([&] { return rig.worker->stats().working_memory_releases == 1; }));
  auto second = rig.Run(Turn("s1", "system", "second question", 5));
  ASSERT_TRUE(second.has_value()) << second.error().ToString();

  // The same two turns on a worker that never released.
  Rig plain;
  ASSERT_TRUE(plain.Run(Turn("s1", "system", "first question", 5)).has_value());
  auto expected = plain.Run(Turn("s1", "system", "second question", 5));
  ASSERT_TRUE(expected.has_value());
  EXPECT_EQ(second->tokens, expected->tokens);
  EXPECT_EQ(second->stats.cached_tokens, 0);
  EXPECT_GT(expected->stats.cached_tokens, 0);
}

// --- Pinned prefixes.

// A pinned system prompt is warm for the first request and still after an idle release, and
// a request that starts from it answers as it would cold.
TEST(EngineWorker, APinnedSystemPromptIsWarmFromTheStartAndAfterAnIdleRelease) {
  const std::string system = "You are the voice assistant of a small car: answer in one short sentence.";
  for (FakeMemory memory : {FakeMemory::kAttention, FakeMemory::kRecurrent}) {
    SCOPED_TRACE(memory == FakeMemory::kAttention ? "attention" : "recurrent");
    WorkerOptions options = IdleReleaseOptions(60000);
    options.pinned_system_prompts = {system};
    Rig rig({.memory = memory}, options);
    EXPECT_EQ(rig.worker->stats().pinned_prefixes, 1u);
    EXPECT_GT(rig.worker->stats().pinned_bytes, 0u);

    const Job first = Chat(system, "Open the window.", 6);
    auto first_done = rig.Run(first);
    ASSERT_TRUE(first_done.has_value()) << first_done.error().ToString();
    EXPECT_GE(first_done->stats.cached_tokens, static_cast<int32_t>(system.size()));
    EXPECT_EQ(first_done->tokens, Solo(first, {.memory = memory}));

    AwaitIdle(*rig.worker);
    rig.clock.Advance(60000);
    ASSERT_TRUE(Eventually([&] { return rig.worker->stats().working_memory_releases == 1; }));
    const Job second = Chat(system, "How far to the station?", 6);
    auto second_done = rig.Run(second);
    ASSERT_TRUE(second_done.has_value()) << second_done.error().ToString();
    EXPECT_GE(second_done->stats.cached_tokens, static_cast<int32_t>(system.size()));
    EXPECT_EQ(second_done->tokens, Solo(second, {.memory = memory}));
    EXPECT_EQ(rig.worker->stats().pinned_hits, 2u);
    // Another system prompt does not start from it.
    auto other = rig.Run(Chat("Another system prompt entirely.", "Hello there.", 4));
    ASSERT_TRUE(other.has_value());
    EXPECT_LT(other->stats.cached_tokens, 16);
    EXPECT_EQ(rig.worker->stats().pinned_hits, 2u);
  }
}

}  // namespace
}  // namespace llmd::sched
