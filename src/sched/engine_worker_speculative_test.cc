// Speculative decoding in the scheduler, over the fake engine: the output is the target's,
// token for token, whatever the drafts; rejected draft tokens leave the memory; stops, limits
// and cancellation inside a verified block; the pacer. Structure only, never time.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/fake_engine.h"
#include "sched/draft_governor.h"
#include "sched/draft_pacer.h"
#include "sched/engine_worker.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): the rig is this file's vocabulary

FakeEngineOptions Drafting(int32_t draft_max, int32_t draft_correct = -1) {
  return {.draft_max = draft_max, .draft_correct = draft_correct};
}

int64_t MostOutputsOfOneSequence(const Batches& batches) {
  int64_t most = 0;
  for (const auto& batch : batches) {
    for (int32_t s : SequencesIn(batch)) {
      most = std::max<int64_t>(most, std::count_if(batch.begin(), batch.end(), [&](const DecodeItem& d) {
        return d.sequence == s && d.logits;
      }));
    }
  }
  return most;
}

// Batches holding more than one item with logits for one sequence: verified drafts.
int CountVerifyBatches(const Batches& batches) {
  return static_cast<int>(std::count_if(batches.begin(), batches.end(), [](const std::vector<DecodeItem>& batch) {
    return MostOutputsOfOneSequence({batch}) > 1;
  }));
}

// What the sequence must hold after a job: its prompt and every generated token but the last
// (the last is sampled, never decoded). A job's Done can come before the engine thread has
// taken back the rest of its last block; a job that only counts its prompt runs after that
// on the same thread, and touches no slot.
void Settle(Rig& rig) {
  Job barrier = Raw("x", 1);
  barrier.count_only = true;
  ASSERT_TRUE(rig.Run(std::move(barrier)).has_value());
}

void ExpectMemoryIsPromptAndOutput(Rig& rig, int32_t sequence, const std::vector<TokenId>& prompt,
                                   const std::vector<TokenId>& out) {
  Settle(rig);
  std::vector<TokenId> expected = prompt;
  expected.insert(expected.end(), out.begin(), out.end());
  const std::vector<TokenId> held = rig.fake->history(sequence);
  ASSERT_LE(held.size(), expected.size());
  EXPECT_GE(held.size() + 1, expected.size());
  EXPECT_TRUE(std::equal(held.begin(), held.end(), expected.begin())) << "the memory holds a rejected draft token";
}

TEST(Speculative, DraftsThatAreRightAreAcceptedWholeAndSaveSteps) {
  const std::vector<TokenId> plain = Solo(Raw("speculate", 40));
  Rig rig(Drafting(4));
  auto done = rig.Run(Raw("speculate", 40));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->tokens, plain);
  EXPECT_GT(done->stats.draft_tokens, 0);
  EXPECT_EQ(done->stats.accepted_draft_tokens, done->stats.draft_tokens);
  Settle(rig);
  // One step for the prompt, then one per block of up to 1 + 4 tokens, except the 4th to 6th
  // generating steps, plain ones the DraftGovernor measures: 40 tokens in 1 + 3 + 3 + 5 steps.
  static_assert(DraftGovernor::kMinSamples == 3);
  EXPECT_EQ(rig.fake->batches().size(), 12u);
  EXPECT_EQ(rig.fake->accepted_drafts_reported(), done->stats.accepted_draft_tokens);
  const WorkerStats stats = rig.worker->stats();
  EXPECT_EQ(stats.draft_tokens, static_cast<uint64_t>(done->stats.draft_tokens));
  EXPECT_EQ(stats.accepted_draft_tokens, static_cast<uint64_t>(done->stats.accepted_draft_tokens));
  ExpectMemoryIsPromptAndOutput(rig, 0, FakeEngine::Bytes("speculate"), done->tokens);
}

TEST(Speculative, APartlyWrongDraftGivesTheSameTokensAndTakesBackTheRest) {
  const std::vector<TokenId> plain = Solo(Raw("partly", 30));
  Rig rig(Drafting(4, /*draft_correct=*/2));
  auto done = rig.Run(Raw("partly", 30));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->tokens, plain);
  // Each block: 2 of 4 accepted, the target's own token after them.
  EXPECT_LT(done->stats.accepted_draft_tokens, done->stats.draft_tokens);
  EXPECT_GE(done->stats.accepted_draft_tokens * 2, done->stats.draft_tokens);
  EXPECT_GT(rig.fake->draft_tokens_decoded(), 0);
  ExpectMemoryIsPromptAndOutput(rig, 0, FakeEngine::Bytes("partly"), done->tokens);
}

TEST(Speculative, FourConcurrentStreamsEachEqualTheirSoloRunWhileTheyOverlap) {
  const std::vector<std::string> prompts = {"first stream", "second one", "the third", "and a fourth"};
  std::vector<std::vector<TokenId>> solo;
  for (const auto& p : prompts) solo.push_back(Solo(Raw(p, 24)));
  Rig rig(Drafting(4, /*draft_correct=*/1));
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (const auto& p : prompts) channels.push_back(rig.Submit(Raw(p, 24)));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  rig.Release();
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    EXPECT_EQ(done->tokens, solo[i]) << prompts[i];
    EXPECT_GT(done->stats.draft_tokens, 0);
  }
  // The streams were verified together: some step holds drafts of all four.
  bool all_four = false;
  for (const auto& batch : rig.fake->batches()) {
    int drafting = 0;
    for (int32_t s : SequencesIn(batch)) {
      drafting += std::count_if(batch.begin(), batch.end(),
                                [&](const DecodeItem& d) { return d.sequence == s && d.logits; }) > 1;
    }
    all_four = all_four || drafting == 4;
  }
  EXPECT_TRUE(all_four);
}

TEST(Speculative, RecurrentMemoryTakesRejectedTokensBackWithinItsRollback) {
  FakeEngineOptions options = Drafting(4, /*draft_correct=*/1);
  options.memory = FakeMemory::kRecurrent;
  options.rollback_tokens = 4;
  // Kernels that compute a verified block token by token, as llama.cpp's CPU ones do (the
  // recurrent state's own shape sensitivity is cache_invariance_test's): the text is then the
  // unspeculated one.
  options.shape_sensitive = false;
  const std::vector<TokenId> plain =
      Solo(Raw("recurrent", 30), {.memory = FakeMemory::kRecurrent, .shape_sensitive = false});
  Rig rig(options);
  auto done = rig.Run(Raw("recurrent", 30));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->tokens, plain);
  EXPECT_GT(done->stats.draft_tokens, done->stats.accepted_draft_tokens);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
  ExpectMemoryIsPromptAndOutput(rig, 0, FakeEngine::Bytes("recurrent"), done->tokens);
}

TEST(Speculative, DraftsNeverExceedWhatRecurrentMemoryCanTakeBack) {
  FakeEngineOptions options = Drafting(4, /*draft_correct=*/0);
  options.memory = FakeMemory::kRecurrent;
  options.rollback_tokens = 2;
  Rig rig(options);
  auto done = rig.Run(Raw("short rollback", 20));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(MostOutputsOfOneSequence(rig.fake->batches()), 3);  // the pending token and 2 guesses
  EXPECT_EQ(rig.fake->refused_operations(), 0);

  options.rollback_tokens = 0;
  Rig none(options);
  auto plain = none.Run(Raw("no rollback", 20));
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->stats.draft_tokens, 0);
  EXPECT_EQ(none.fake->draft_tokens_decoded(), 0);
}

TEST(Speculative, ARequestCanTurnItOffOrCapIt) {
  Rig off(Drafting(4));
  Job job = Raw("no thanks", 20);
  job.options.draft_max = 0;
  auto done = off.Run(std::move(job));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->stats.draft_tokens, 0);
  EXPECT_EQ(CountVerifyBatches(off.fake->batches()), 0);

  Rig capped(Drafting(4));
  Job two = Raw("just two", 20);
  two.options.draft_max = 2;
  done = capped.Run(std::move(two));
  ASSERT_TRUE(done.has_value());
  EXPECT_GT(done->stats.draft_tokens, 0);
  EXPECT_EQ(MostOutputsOfOneSequence(capped.fake->batches()), 3);  // the pending token and 2 guesses
}

TEST(Speculative, MaxTokensEndsInsideABlock) {
  Rig rig(Drafting(4));
  for (int32_t max_tokens : {1, 2, 5, 7}) {
    auto done = rig.Run(Raw("limit " + std::to_string(max_tokens), max_tokens));
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->tokens.size(), static_cast<size_t>(max_tokens));
    EXPECT_EQ(done->stats.finish_reason, FinishReason::kLength);
    EXPECT_EQ(done->tokens, Solo(Raw("limit " + std::to_string(max_tokens), max_tokens)));
  }
}

TEST(Speculative, AStopStringInsideAnAcceptedBlockEndsTheTextThere) {
  const std::vector<TokenId> plain = Solo(Raw("stop inside", 40));
  std::string text;
  for (TokenId t : plain) text += FakeEngine().TokenText(t);
  // A stop string that starts at the 6th generated character: inside the second block.
  const std::string stop = text.substr(5, 2);
  const std::string expected = text.substr(0, text.find(stop));
  Job with_stop = Raw("stop inside", 40);
  with_stop.stop = {stop};
  Rig rig(Drafting(4));
  auto done = rig.Run(std::move(with_stop));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->text, expected);
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kStop);
  ExpectMemoryIsPromptAndOutput(rig, 0, FakeEngine::Bytes("stop inside"), done->tokens);
}

TEST(Speculative, ACancelDuringAVerifiedBlockEndsTheJobAfterIt) {
  const std::vector<TokenId> plain = Solo(Raw("cancel me", 200));
  Rig rig(Drafting(4));
  rig.fake->HoldDecodes();
  auto channel = rig.Submit(Raw("cancel me", 200));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the prompt
  ASSERT_TRUE(rig.Step());                            // the first token's block, with a draft
  ASSERT_TRUE(rig.Step());
  channel->Cancel();  // while that block is being decoded
  rig.Release();
  auto done = Await(*channel);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kCancelled);
  ASSERT_LE(done->tokens.size(), plain.size());
  EXPECT_GT(done->tokens.size(), 1u);
  EXPECT_TRUE(std::equal(done->tokens.begin(), done->tokens.end(), plain.begin()));
  ExpectMemoryIsPromptAndOutput(rig, 0, FakeEngine::Bytes("cancel me"), done->tokens);
}

TEST(Speculative, AFailedStepWithDraftsIsRetriedPerSequence) {
  const std::vector<TokenId> a = Solo(Raw("retry a", 20)), b = Solo(Raw("retry bb", 20));
  Rig rig(Drafting(4, /*draft_correct=*/2));
  rig.fake->HoldDecodes();
  auto ca = rig.Submit(Raw("retry a", 20));
  auto cb = rig.Submit(Raw("retry bb", 20));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  ASSERT_TRUE(rig.Step());  // the prompts
  rig.fake->FailNextDecodes(1);  // the step verifying both drafts
  rig.Release();
  auto da = Await(*ca), db = Await(*cb);
  ASSERT_TRUE(da.has_value() && db.has_value());
  EXPECT_EQ(da->tokens, a);
  EXPECT_EQ(db->tokens, b);
  ASSERT_FALSE(rig.fake->failed_batches().empty());
  EXPECT_GT(CountVerifyBatches(rig.fake->failed_batches()), 0);
}

TEST(Speculative, DraftingPausesWhenTheTargetKeepsRejectingIt) {
  const std::vector<TokenId> plain = Solo(Raw("always wrong", 200));
  Rig rig(Drafting(4, /*draft_correct=*/0));
  auto done = rig.Run(Raw("always wrong", 200));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->tokens, plain);
  EXPECT_EQ(done->stats.accepted_draft_tokens, 0);
  // A draft of 4 and two short ones of 1 that keep nothing stop drafting; then probes of 1
  // token after pauses of 32 and 64 tokens (the next pause, 128, outlasts the reply).
  EXPECT_EQ(done->stats.draft_tokens, 8);
}

TEST(Speculative, SyntheticAcceptanceTakesDraftsWhateverTheTargetSays) {
  // Benchmarks only: every draft token accepted at probability 1, though each is wrong.
  FakeEngineOptions always = Drafting(4, /*draft_correct=*/0);
  always.synthetic_acceptance = {1, 1, 1, 1};
  Rig rig(always);
  auto done = rig.Run(Raw("synthetic", 21));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->stats.accepted_draft_tokens, done->stats.draft_tokens);
  // 1, 3 blocks of 1 + 4, 3 plain steps (the governor measures them), a block of 2.
  EXPECT_EQ(done->stats.draft_tokens, 13);
  EXPECT_NE(done->tokens, Solo(Raw("synthetic", 21)));  // the text is not the model's

  FakeEngineOptions never = Drafting(4);  // right drafts, all refused by the draw
  never.synthetic_acceptance = {0, 0, 0, 0};
  Rig none(never);
  done = none.Run(Raw("synthetic", 21));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->stats.accepted_draft_tokens, 0);
}

// Drafts that keep 1 token of 4 (enough for each pacer), on an engine whose step costs
// `step_ms` plus `item_ms` a token in simulated time (the rig's clock, when given).
FakeEngineOptions CostedDrafting(int32_t step_ms, int32_t item_ms, ManualClock* clock = nullptr) {
  FakeEngineOptions options = Drafting(4, /*draft_correct=*/1);
  options.step_ms = step_ms;
  options.item_ms = item_ms;
  options.clock = clock;
  return options;
}

// Runs four streams of `max_tokens` at once: their drafted tokens, each stream checked against
// what it generates alone.
int64_t DraftedByFourStreams(Rig& rig, int32_t max_tokens) {
  // A blocker holds the engine while the four queue, so they are admitted together and every
  // step is four wide, however the threads are scheduled.
  rig.fake->HoldDecodes();
  auto blocker = rig.Submit(Raw("x", 1));
  EXPECT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (int i = 0; i < 4; ++i) channels.push_back(rig.Submit(Raw("stream " + std::to_string(i), max_tokens)));
  rig.Release();
  EXPECT_TRUE(Await(*blocker).has_value());
  int64_t drafted = 0;
  for (int i = 0; i < 4; ++i) {
    auto done = Await(*channels[static_cast<size_t>(i)]);
    EXPECT_TRUE(done.has_value());
    if (!done.has_value()) continue;
    EXPECT_EQ(done->tokens, Solo(Raw("stream " + std::to_string(i), max_tokens)));
    drafted += done->stats.draft_tokens;
  }
  return drafted;
}

TEST(Speculative, StepsStopDraftingWhereVerifyingCostsMoreThanItSaves) {
  // 4 streams drafting 4 each: 20 tokens a step, 2 generated a stream. With 40 ms a token,
  // that is 101 ms a generated token against 42.5 without drafts; with 1 ms a token and 100 a
  // step, 15 against 26.
  Rig costly_rig(CostedDrafting(/*step_ms=*/10, /*item_ms=*/40));
  Rig cheap_rig(CostedDrafting(/*step_ms=*/100, /*item_ms=*/1));
  const int64_t costly = DraftedByFourStreams(costly_rig, 120);
  const int64_t cheap = DraftedByFourStreams(cheap_rig, 120);
  // Cheap: drafts nearly every step (4 streams x ~60 steps x 4). Costly: the first steps and
  // the periodic tries only.
  EXPECT_GT(cheap, 600);
  EXPECT_LT(costly, cheap / 3);
  EXPECT_GT(costly, 0);
}

TEST(Speculative, ASwappedInEngineHasWhatItsDraftsCostMeasuredAfresh) {
  // The worker learns that drafting does not pay on the costly engine, then gets a new engine,
  // which it measures from the start again: every stream drafts in the first steps.
  Rig rig(CostedDrafting(10, 40));
  DraftedByFourStreams(rig, 120);
  auto next = std::make_unique<FakeEngine>(CostedDrafting(10, 40, &rig.clock));
  rig.fake = next.get();  // the old one is released at the swap
  rig.worker->SwapEngine(std::move(next));
  EXPECT_GE(DraftedByFourStreams(rig, 8), 4 * DraftGovernor::kMinSamples);
}

TEST(DraftGovernor, MeasuresBothSidesThenKeepsTheFasterAndTriesTheOtherNowAndThen) {
  DraftGovernor g;
  for (int i = 0; i < DraftGovernor::kMinSamples; ++i) {
    ASSERT_TRUE(g.MayDraft(4));  // drafting is measured first...
    g.OnStep(4, /*drafted=*/true, /*us=*/8000, /*tokens=*/8);
  }
  for (int i = 0; i < DraftGovernor::kMinSamples; ++i) {
    ASSERT_FALSE(g.MayDraft(4));  // ...then the plain step
    g.OnStep(4, /*drafted=*/false, /*us=*/2000, /*tokens=*/4);
  }
  EXPECT_DOUBLE_EQ(g.us_per_token(4, true), 1000);
  EXPECT_DOUBLE_EQ(g.us_per_token(4, false), 500);
  int drafting_steps = 0;
  constexpr int kPeriod = DraftGovernor::kTryEvery + DraftGovernor::kTrySteps;
  for (int i = 0; i < 10 * kPeriod; ++i) drafting_steps += g.MayDraft(4) ? 1 : 0;
  EXPECT_EQ(drafting_steps, 10 * DraftGovernor::kTrySteps);  // only the tries
  EXPECT_TRUE(g.MayDraft(1));  // another batch size is measured on its own

  // Drafting gets faster (the tries measure it): it is chosen.
  for (int i = 0; i < 8; ++i) g.OnStep(4, /*drafted=*/true, /*us=*/1000, /*tokens=*/8);
  EXPECT_LT(g.us_per_token(4, true), g.us_per_token(4, false));
  int plain_steps = 0;
  for (int i = 0; i < 10 * kPeriod; ++i) plain_steps += g.MayDraft(4) ? 0 : 1;
  EXPECT_EQ(plain_steps, 10 * DraftGovernor::kTrySteps);
}

TEST(DraftPacer, ADrafterThatKeepsNothingStopsAfterThreeDraftsAndProbesWithLongerPauses) {
  DraftPacer pacer;
  pacer.OnVerified(4, 0);
  EXPECT_TRUE(pacer.ShouldDraft());  // maybe a good drafter's unlucky draft
  EXPECT_EQ(pacer.max_tokens(), DraftPacer::kProbeTokens);  // but the next one is short
  pacer.OnVerified(1, 0);
  EXPECT_TRUE(pacer.ShouldDraft());
  pacer.OnVerified(1, 0);  // three drafts, nothing kept: it does not pay
  EXPECT_FALSE(pacer.ShouldDraft());
  for (int i = 0; i < DraftPacer::kFirstPause; ++i) pacer.OnTokenWithoutDraft();
  EXPECT_TRUE(pacer.ShouldDraft());
  EXPECT_EQ(pacer.max_tokens(), DraftPacer::kProbeTokens);  // a short probe
  pacer.OnVerified(1, 0);  // the probe fails: twice as long
  EXPECT_EQ(pacer.pause(), 2 * DraftPacer::kFirstPause);
  for (int i = 0; i < 2 * DraftPacer::kFirstPause; ++i) pacer.OnTokenWithoutDraft();
  pacer.OnVerified(1, 1);  // the probe pays: drafting resumes at full length, the pause resets
  EXPECT_TRUE(pacer.ShouldDraft());
  EXPECT_GT(pacer.max_tokens(), DraftPacer::kProbeTokens);
  EXPECT_EQ(pacer.pause(), DraftPacer::kFirstPause);
}

TEST(DraftPacer, BurstyAcceptanceIsJudgedOverManyDraftsNotTheLastFew) {
  // At 60 % a token, drafts that keep nothing come in runs; the share over many is what counts.
  DraftPacer good;
  good.OnVerified(4, 4);
  for (int i = 0; i < 4; ++i) good.OnVerified(4, 0);  // 4 of 20: 20 %, judged...
  EXPECT_FALSE(good.ShouldDraft());                    // ...as not paying
  DraftPacer lucky;
  lucky.OnVerified(4, 4);
  lucky.OnVerified(4, 0);
  lucky.OnVerified(4, 0);
  lucky.OnVerified(4, 3);  // 7 of 16
  for (int i = 0; i < 3; ++i) lucky.OnVerified(4, 0);  // 7 of 28: still 25 %
  EXPECT_TRUE(lucky.ShouldDraft());
  EXPECT_GT(lucky.max_tokens(), DraftPacer::kProbeTokens);  // it has kept tokens: full drafts
  lucky.OnVerified(4, 0);  // 7 of 32
  EXPECT_FALSE(lucky.ShouldDraft());
}

TEST(DraftPacer, TheShareForgetsOldDrafts) {
  // A drafter that paid for a long time and then stops paying is caught within a few dozen
  // draft tokens, not after as many as it once got right.
  DraftPacer pacer;
  for (int i = 0; i < 100; ++i) pacer.OnVerified(4, 4);
  int drafts = 0;
  while (pacer.ShouldDraft() && drafts < 100) {
    pacer.OnVerified(4, 0);
    ++drafts;
  }
  EXPECT_FALSE(pacer.ShouldDraft());
  EXPECT_LE(drafts, 20);
}

TEST(DraftPacer, ThePauseStopsGrowingAtItsCap) {
  DraftPacer pacer;
  for (int i = 0; i < DraftPacer::kFruitlessDrafts; ++i) pacer.OnVerified(1, 0);
  for (int probe = 0; probe < 12; ++probe) {
    while (!pacer.ShouldDraft()) pacer.OnTokenWithoutDraft();
    pacer.OnVerified(4, 0);
  }
  EXPECT_EQ(pacer.pause(), DraftPacer::kMaxPause);
}

}  // namespace
}  // namespace llmd::sched
