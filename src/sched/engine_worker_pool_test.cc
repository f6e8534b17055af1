// One KV pool the sequences share (the default context, engine/context_size.h), on the fake
// engine: a request may use the whole pool; when two do not fit together, the one that ranks
// lower (a lower class, else the newer job) gives its memory up and waits for a job to end,
// and every answer is the one its job gives alone. Stated in what the jobs report, never in
// time.
#include <gtest/gtest.h>

#include <string>

#include "engine/fake_engine.h"
#include "sched/engine_worker.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): test helpers

// A pool of 100 cells, all of which one request may use (context = pool, as ResolveContext
// sizes it), shared by two sequences that both run in a step.
FakeEngineOptions Pool(FakeMemory memory = FakeMemory::kAttention) {
  return {.sequences = 2, .context_tokens = 100, .memory = memory, .pool_tokens = 100};
}

WorkerOptions BothRun(uint64_t parked_budget_bytes) {
  WorkerOptions options = TestOptions();
  options.decode_width = 2;
  options.parked_budget_bytes = parked_budget_bytes;
  return options;
}

struct PoolCase {
  FakeMemory memory;
  uint64_t parked_budget_bytes;
};

class EngineWorkerPool : public ::testing::TestWithParam<PoolCase> {};

// Two jobs of one class, 40 prompt tokens and 40 answer tokens each: 160 cells in a pool of
// 100. Both start; when the pool runs out, the newer gives way, and goes on once the older
// has ended.
TEST_P(EngineWorkerPool, TheNewerOfTwoJobsThatDoNotFitTogetherWaitsForTheOlder) {
  const FakeEngineOptions engine = Pool(GetParam().memory);
  const WorkerOptions options = BothRun(GetParam().parked_budget_bytes);
  Rig rig(engine, options);
  const Job older = Raw(std::string(40, 'o'), 40);
  const Job newer = Raw(std::string(40, 'n'), 40);
  rig.fake->HoldDecodes();
  auto older_channel = rig.Submit(older);
  auto newer_channel = rig.Submit(newer);
  rig.Release();
  auto older_done = Await(*older_channel);
  auto newer_done = Await(*newer_channel);
  ASSERT_TRUE(older_done.has_value()) << older_done.error().ToString();
  ASSERT_TRUE(newer_done.has_value()) << newer_done.error().ToString();
  EXPECT_EQ(older_done->tokens, Solo(older, engine, options));
  EXPECT_EQ(newer_done->tokens, Solo(newer, engine, options));
  EXPECT_EQ(older_done->stats.preemptions, 0);
  EXPECT_GE(newer_done->stats.preemptions, 1);
  EXPECT_EQ(newer_done->tokens.size(), 40u) << "nothing was cut to make it fit";
  EXPECT_FALSE(rig.fake->failed_batches().empty());  // the step that found the pool full
  EXPECT_EQ(rig.worker->stats().parked_bytes, 0u);
}

// A background job holds most of the pool; an interactive one arrives and needs room: the
// background job gives way, though the step had room for both to run.
TEST_P(EngineWorkerPool, AnInteractiveJobTakesTheRoomOfABackgroundOne) {
  const FakeEngineOptions engine = Pool(GetParam().memory);
  const WorkerOptions options = BothRun(GetParam().parked_budget_bytes);
  Rig rig(engine, options);
  const Job background = Classed(Raw(std::string(50, 'b'), 40), RequestClass::kBackground);
  const Job voice = Classed(Raw(std::string(30, 'v'), 20), RequestClass::kInteractive);
  rig.fake->HoldDecodes();
  auto background_channel = rig.Submit(background);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 11; ++i) ASSERT_TRUE(rig.Step());  // prefilled, and 10 tokens generated
  auto voice_channel = rig.Submit(voice);
  rig.Release();
  auto voice_done = Await(*voice_channel);
  auto background_done = Await(*background_channel);
  ASSERT_TRUE(voice_done.has_value()) << voice_done.error().ToString();
  ASSERT_TRUE(background_done.has_value()) << background_done.error().ToString();
  EXPECT_EQ(voice_done->tokens, Solo(voice, engine, options));
  EXPECT_EQ(background_done->tokens, Solo(background, engine, options));
  EXPECT_EQ(voice_done->stats.preemptions, 0);
  EXPECT_GE(background_done->stats.preemptions, 1);
}

INSTANTIATE_TEST_SUITE_P(ParkedOrRecomputed, EngineWorkerPool,
                         ::testing::Values(PoolCase{FakeMemory::kAttention, 1 << 20},
                                           PoolCase{FakeMemory::kAttention, 0},
                                           PoolCase{FakeMemory::kRecurrent, 1 << 20},
                                           PoolCase{FakeMemory::kRecurrent, 0}),
                         [](const ::testing::TestParamInfo<PoolCase>& info) {
                           return std::string(info.param.memory == FakeMemory::kAttention ? "Attention" : "Recurrent") +
                                  (info.param.parked_budget_bytes > 0 ? "Parked" : "Recomputed");
                         });

TEST(EngineWorkerPoolLimits, OneJobMayUseTheWholePoolAndItsAnswerEndsThere) {
  Rig rig(Pool(), BothRun(0));
  auto done = rig.Run(Raw(std::string(70, 'x'), 200));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kLength);
  EXPECT_EQ(done->stats.prompt_tokens + static_cast<int32_t>(done->tokens.size()), 100);
}

TEST(EngineWorkerPoolLimits, APromptThePoolCannotHoldIsRefusedWithTheNumbers) {
  Rig rig(Pool(), BothRun(0));
  auto refused = rig.Run(Raw(std::string(120, 'x'), 4));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason(), ErrorReason::kPromptTooLong);
  const std::string m = refused.error().message();
  EXPECT_NE(m.find("tokens >= context of 100"), std::string::npos) << m;
  EXPECT_NE(m.find("at most 99 prompt tokens"), std::string::npos) << m;
  EXPECT_NE(m.find("the KV pool the requests share"), std::string::npos) << m;
}

TEST(EngineWorkerPoolLimits, ARequestsOwnContextIsHonouredUpToThePool) {
  Rig rig(Pool(), BothRun(0));
  Job small = Raw(std::string(30, 'x'), 200);
  small.options.context_tokens = 40;
  auto done = rig.Run(small);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.prompt_tokens + static_cast<int32_t>(done->tokens.size()), 40);
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kLength);

  Job too_small = Raw(std::string(30, 'x'), 4);
  too_small.options.context_tokens = 20;
  auto refused = rig.Run(too_small);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("the request's own context (num_ctx:"), std::string::npos)
      << refused.error().message();

  Job large = Raw(std::string(70, 'x'), 200);
  large.options.context_tokens = 1000;  // more than the pool: the pool is the limit
  auto capped = rig.Run(large);
  ASSERT_TRUE(capped.has_value()) << capped.error().ToString();
  EXPECT_EQ(capped->stats.prompt_tokens + static_cast<int32_t>(capped->tokens.size()), 100);
}

}  // namespace
}  // namespace llmd::sched
