#include "sched/step_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace llmd::sched {
namespace {

constexpr auto kInteractive = RequestClass::kInteractive;
constexpr auto kNormal = RequestClass::kNormal;
constexpr auto kBackground = RequestClass::kBackground;

SlotView Generating(size_t slot, RequestClass c, uint64_t admitted) {
  return {.slot = slot, .request_class = c, .admitted = admitted, .generating = true};
}
SlotView Prefilling(size_t slot, RequestClass c, uint64_t admitted) {
  return {.slot = slot, .request_class = c, .admitted = admitted, .prefilling = true};
}

TEST(StepPolicy, EverySlotRunsWhileTheWidthHoldsThem) {
  const StepChoice choice = ChooseStep({Generating(0, kNormal, 1), Prefilling(1, kNormal, 2)}, {.decode_width = 4}, 1);
  EXPECT_EQ(choice.decode, (std::vector<size_t>{0}));
  EXPECT_EQ(choice.prefill, (std::vector<size_t>{1}));
  EXPECT_EQ(choice.prefill_shared, (std::vector<bool>{false}));
  EXPECT_TRUE(choice.paused.empty());
}

TEST(StepPolicy, AnInteractiveJobBeyondTheWidthPausesTheNewestLowestClassSlot) {
  std::vector<SlotView> busy = {Generating(0, kBackground, 1), Generating(2, kBackground, 2),
                                Generating(1, kNormal, 3), Prefilling(3, kInteractive, 4)};
  // While interactive work runs a prompt takes a place in the width: the interactive prompt
  // first, then by class, then by age.
  const StepChoice prompt = ChooseStep(busy, {.decode_width = 3}, 1);
  EXPECT_EQ(prompt.prefill, (std::vector<size_t>{3}));
  EXPECT_EQ(prompt.decode, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(prompt.paused, (std::vector<size_t>{2}));
  // Once it decodes, it goes first, then by class, then by age; a background slot pauses (of
  // the two, the one that keeps the decoding sequences consecutive: 1-3, one run).
  busy[3] = Generating(3, kInteractive, 4);
  const StepChoice choice = ChooseStep(busy, {.decode_width = 3}, 2);
  EXPECT_EQ(choice.decode, (std::vector<size_t>{3, 1, 2}));
  EXPECT_EQ(choice.paused, (std::vector<size_t>{0}));
}

TEST(StepPolicy, APromptPastTheWidthIsComputedBesideTheDecodesAndItsJobWaitsItsTurn) {
  std::vector<SlotView> busy;
  for (size_t i = 0; i < 4; ++i) busy.push_back(Generating(i, kBackground, 1 + i));
  busy.push_back(Prefilling(4, kBackground, 5));
  const StepChoice ahead = ChooseStep(busy, {.decode_width = 4, .interactive_expected = true}, 1);
  EXPECT_EQ(ahead.decode, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(ahead.prefill, (std::vector<size_t>{4}));
  EXPECT_EQ(ahead.prefill_shared, (std::vector<bool>{true}));  // within the shared tokens, as any lower prompt
  EXPECT_TRUE(ahead.paused.empty());
  // An interactive slot running, the prompt takes a place in the width: it waits.
  busy.push_back(Generating(5, kInteractive, 6));
  const StepChoice beside_interactive = ChooseStep(busy, {.decode_width = 4}, 1);
  EXPECT_EQ(beside_interactive.paused.size(), 2u);
  EXPECT_TRUE(beside_interactive.prefill.empty());
  busy.pop_back();
  // Its prompt computed, it sits out until one of the four ends, then decodes.
  busy[4] = Generating(4, kBackground, 5);
  EXPECT_EQ(ChooseStep(busy, {.decode_width = 4}, 2).paused, (std::vector<size_t>{4}));
  busy.erase(busy.begin() + 1);
  const StepChoice after = ChooseStep(busy, {.decode_width = 4}, 3);
  EXPECT_EQ(after.decode, (std::vector<size_t>{0, 2, 3, 4}));
  EXPECT_TRUE(after.paused.empty());
}

TEST(StepPolicy, RunsCountsConsecutiveSequencesInAnyOrder) {
  EXPECT_EQ(Runs({}), 0u);
  EXPECT_EQ(Runs({3, 1, 2, 0}), 1u);
  EXPECT_EQ(Runs({4, 0, 1, 3}), 2u);
  EXPECT_EQ(Runs({5, 3, 1}), 3u);
}

TEST(StepPolicy, WhichOfAPeersOwnSlotsPausesKeepsTheDecodingSequencesConsecutive) {
  // One peer's four background requests on sequences 0-3, and an interactive one on 4: pausing
  // the newest (on 2) would decode 0, 1, 3 and 4, two runs (two passes over the weights);
  // pausing the one on 0 decodes 1-4, one run.
  std::vector<SlotView> busy;
  for (size_t s : {0u, 1u, 3u, 2u}) busy.push_back(Generating(s, kBackground, 1 + busy.size()));
  for (SlotView& v : busy) v.peer_uid = 7;
  busy.push_back(Generating(4, kInteractive, 5));
  const StepChoice choice = ChooseStep(busy, {.decode_width = 4}, 1);
  std::vector<size_t> decode = choice.decode;
  std::sort(decode.begin(), decode.end());
  EXPECT_EQ(decode, (std::vector<size_t>{1, 2, 3, 4}));
  EXPECT_EQ(choice.paused, (std::vector<size_t>{0}));

  // Another peer's slot is not the policy's to trade: peer 8's only request keeps its turn,
  // ahead of peer 7's second, whatever the runs.
  busy[0].peer_uid = 8;
  const StepChoice fair = ChooseStep(busy, {.decode_width = 4}, 1);
  std::vector<size_t> fair_decode = fair.decode;
  std::sort(fair_decode.begin(), fair_decode.end());
  EXPECT_EQ(fair_decode, (std::vector<size_t>{0, 1, 3, 4}));
}

TEST(StepPolicy, ALowerRunSmallerThanTheStepsAverageSitsOutBesideAHigherClass) {
  // One peer's background requests on 0, 2 and 3 decode, the one on 1 has its next prompt to
  // compute, and a person's request decodes on 4. The prompt ranks last and waits (it takes a
  // place while interactive work runs), leaving 0 | 2 3 4: two passes over the weights for
  // four tokens. Sequence 0 alone is a run below the average (1 x 2 runs < 4): it sits out.
  std::vector<SlotView> busy = {Generating(0, kBackground, 1), Generating(2, kBackground, 2),
                                Generating(3, kBackground, 3), Prefilling(1, kBackground, 4),
                                Generating(4, kInteractive, 5)};
  for (SlotView& v : busy) v.peer_uid = v.request_class == kInteractive ? 9 : 7;
  const StepPolicyOptions passes{.decode_width = 4, .runs_cost_passes = true};
  const StepChoice choice = ChooseStep(busy, passes, 1);
  std::vector<size_t> decode = choice.decode;
  std::sort(decode.begin(), decode.end());
  EXPECT_EQ(decode, (std::vector<size_t>{2, 3, 4}));
  std::vector<size_t> paused = choice.paused;
  std::sort(paused.begin(), paused.end());
  EXPECT_EQ(paused, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(choice.prefill.empty()) << "the place left is not a prompt's: the person's step stays short";

  // Where a run is no pass of its own (one KV stream for all), every place is used.
  const StepChoice one_stream = ChooseStep(busy, {.decode_width = 4}, 1);
  std::vector<size_t> all = one_stream.decode;
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<size_t>{0, 2, 3, 4}));

  // Without a higher class in the step nothing sits out for runs: the prompt is computed
  // beside the three decodes.
  busy.pop_back();
  const StepChoice alone = ChooseStep(busy, passes, 2);
  std::vector<size_t> background = alone.decode;
  std::sort(background.begin(), background.end());
  EXPECT_EQ(background, (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(alone.prefill, (std::vector<size_t>{1}));
  EXPECT_TRUE(alone.paused.empty());
}

TEST(StepPolicy, ARunAsLargeAsTheAverageOrHoldingTheHigherClassDecodes) {
  const StepPolicyOptions passes{.decode_width = 4, .runs_cost_passes = true};
  // 0 1 | 3 4: the lower run holds 2 of 4 in 2 runs, the average: leaving it out gains nothing.
  const StepChoice even = ChooseStep({Generating(0, kBackground, 1), Generating(1, kBackground, 2),
                                      Generating(3, kBackground, 3), Generating(4, kInteractive, 4)},
                                     passes, 1);
  EXPECT_EQ(even.decode.size(), 4u);
  EXPECT_TRUE(even.paused.empty());
  // 0 | 2 3 4 with the person's request on 0: its run is never left out, and the lower run
  // 2 3 4 is above the average.
  const StepChoice person = ChooseStep({Generating(0, kInteractive, 1), Generating(2, kBackground, 2),
                                        Generating(3, kBackground, 3), Generating(4, kBackground, 4)},
                                       passes, 1);
  EXPECT_EQ(person.decode.size(), 4u);
  // 0 | 2 | 4 5 6 with the person on 4: 1 x 3 runs < 5, so a single lower run sits out, the
  // lower-ranked (newer) first; then 0 | 4 5 6 is 1 x 2 < 4, and the other goes too.
  const StepChoice two = ChooseStep({Generating(0, kNormal, 1), Generating(2, kNormal, 2), Generating(4, kInteractive, 3),
                                     Generating(5, kNormal, 4), Generating(6, kNormal, 5)},
                                    {.decode_width = 5, .runs_cost_passes = true}, 1);
  std::vector<size_t> decode = two.decode;
  std::sort(decode.begin(), decode.end());
  EXPECT_EQ(decode, (std::vector<size_t>{4, 5, 6}));
  EXPECT_EQ(two.paused, (std::vector<size_t>{2, 0}));
}

TEST(StepPolicy, InteractivePromptsPrefillFirstAndLowerOnesGetOnlyTheSharedTokens) {
  SlotView recurrent = Prefilling(3, kBackground, 4);
  recurrent.fixed_chunks = true;
  const std::vector<SlotView> busy = {Prefilling(0, kBackground, 1), Prefilling(1, kNormal, 2),
                                      Prefilling(2, kInteractive, 3), recurrent};
  const StepChoice choice = ChooseStep(busy, {.decode_width = 4, .shared_prefill_tokens = 32}, 1);
  EXPECT_EQ(choice.prefill, (std::vector<size_t>{2, 1, 0, 3}));
  // An interactive slot runs: every lower prompt shares, one that cannot be cut short too.
  EXPECT_EQ(choice.prefill_shared, (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(choice.shared_prefill_tokens, 32);
}

TEST(StepPolicy, ExpectedInteractiveWorkSharesTheStepBeforeAnyRuns) {
  SlotView recurrent = Prefilling(2, kBackground, 3);
  recurrent.fixed_chunks = true;
  const std::vector<SlotView> busy = {Prefilling(0, kBackground, 1), Prefilling(1, kNormal, 2), recurrent};
  const StepChoice choice =
      ChooseStep(busy, {.decode_width = 4, .shared_prefill_tokens = 16, .interactive_expected = true}, 1);
  // Only expected, none running: a prompt that cannot be cut short goes whole, and the others
  // share twice the budget they share beside a running interactive slot.
  EXPECT_EQ(choice.prefill_shared, (std::vector<bool>{true, true, false}));
  EXPECT_EQ(choice.shared_prefill_tokens, 16 * kExpectedChunkFactor);
}

// The worker's time budget caps the shared tokens while a person's request runs, never the
// larger chunks of a step where one is only expected (they bound the work a stop throws away).
TEST(StepPolicy, TheTimeBudgetCapsTheSharedTokensOnlyWhileInteractiveWorkRuns) {
  const std::vector<SlotView> beside = {Prefilling(0, kBackground, 1), Prefilling(1, kInteractive, 2)};
  EXPECT_EQ(ChooseStep(beside, {.decode_width = 4, .shared_prefill_tokens = 64, .shared_prefill_cap = 20}, 1)
                .shared_prefill_tokens,
            20);
  EXPECT_EQ(ChooseStep(beside, {.decode_width = 4, .shared_prefill_tokens = 16, .shared_prefill_cap = 20}, 1)
                .shared_prefill_tokens,
            16);
  const StepChoice expected = ChooseStep(
      {Prefilling(0, kBackground, 1)},
      {.decode_width = 4, .shared_prefill_tokens = 64, .shared_prefill_cap = 20, .interactive_expected = true}, 1);
  EXPECT_EQ(expected.shared_prefill_tokens, 64 * kExpectedChunkFactor);
}

// A person's decode call of 45 ms beside prompt tokens of 7 ms each: 6 fit, raised to the
// floor; on a faster prompt, as many as fit; nothing measured: no cap.
TEST(StepPolicy, TheSharedTimeBudgetIsTheDecodeCallsTimeInPromptTokens) {
  EXPECT_EQ(SharedPrefillTimeBudget(45, 7, 16), 16);
  EXPECT_EQ(SharedPrefillTimeBudget(45, 0.5, 16), 90);
  EXPECT_EQ(SharedPrefillTimeBudget(0, 7, 16), 0);
  EXPECT_EQ(SharedPrefillTimeBudget(45, 0, 16), 0);
}

TEST(StepPolicy, WithoutInteractiveWorkEveryPromptHasTheWholeStep) {
  const StepChoice choice =
      ChooseStep({Prefilling(0, kBackground, 1), Prefilling(1, kNormal, 2)}, {.decode_width = 4}, 1);
  EXPECT_EQ(choice.prefill, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(choice.prefill_shared, (std::vector<bool>{false, false}));
}

TEST(StepPolicy, ASlotWaitingForASharedPrefixNeitherRunsNorCountsAsPaused) {
  SlotView waiting = Prefilling(1, kNormal, 2);
  waiting.waiting = true;
  const StepChoice choice = ChooseStep({Prefilling(0, kNormal, 1), waiting}, {.decode_width = 1}, 1);
  EXPECT_EQ(choice.prefill, (std::vector<size_t>{0}));
  EXPECT_TRUE(choice.paused.empty());
}

TEST(StepPolicy, ThePausedDeviceStopsBackgroundWorkOnly) {
  const std::vector<SlotView> busy = {Generating(0, kBackground, 1), Generating(1, kNormal, 2)};
  const StepChoice choice = ChooseStep(busy, {.decode_width = 4, .background = BackgroundAction::kPause}, 1);
  EXPECT_EQ(choice.decode, (std::vector<size_t>{1}));
  EXPECT_EQ(choice.paused, (std::vector<size_t>{0}));
}

TEST(StepPolicy, AThrottledDeviceRunsBackgroundWorkOneRoundInThePeriod) {
  const std::vector<SlotView> busy = {Generating(0, kBackground, 1)};
  const StepPolicyOptions options{.decode_width = 4, .background = BackgroundAction::kThrottle, .throttle_period = 4};
  int ran = 0;
  for (uint64_t round = 1; round <= 12; ++round) ran += ChooseStep(busy, options, round).decode.size();
  EXPECT_EQ(ran, 3);
}

TEST(StepPolicy, AdmissionCountsOnlyTheBusySlotsOfTheSameClassOrHigher) {
  const std::vector<Holder> four_background(4, Holder{kBackground});
  EXPECT_TRUE(MayAdmit({kInteractive}, four_background, 4, 1));
  EXPECT_TRUE(MayAdmit({kNormal}, four_background, 4, 1));
  EXPECT_FALSE(MayAdmit({kBackground}, four_background, 4, 1));
  EXPECT_FALSE(MayAdmit({kNormal}, {{kNormal}, {kInteractive}}, 2, 1));
  EXPECT_TRUE(MayAdmit({kInteractive}, {{kNormal}, {kInteractive}}, 2, 1));
  EXPECT_FALSE(MayAdmit({kInteractive}, {{kInteractive}, {kInteractive}}, 2, 1));
}

TEST(StepPolicy, TheFirstJobPastTheWidthComputesItsPromptAheadWhileTwoSequencesStayFree) {
  const std::vector<Holder> four(4, Holder{kBackground, 1000});
  EXPECT_FALSE(MayAdmit({kBackground, 1000}, four, 4, 2)) << "one for a higher class, one for another peer";
  EXPECT_TRUE(MayAdmit({kBackground, 1000}, four, 4, 3));
  std::vector<Holder> five = four;
  five.push_back({kBackground, 1000});
  EXPECT_FALSE(MayAdmit({kBackground, 1000}, five, 4, 3)) << "one ahead at a time";
  // Another peer's first still finds a sequence beside the one computed ahead, and one stays free.
  EXPECT_TRUE(MayAdmit({kBackground, 2000}, five, 4, 2));
  EXPECT_TRUE(MayAdmit({kInteractive, 3000}, five, 4, 1));
}

TEST(StepPolicy, APeerBehindAnothersManyRequestsTakesASpareSequenceAndTheirNewestPauses) {
  const std::vector<Holder> heavy(4, Holder{kNormal, 1000});
  // One spare sequence is kept for a higher class; with two, the other peer takes one.
  EXPECT_FALSE(MayAdmit({kNormal, 2000}, heavy, 4, 1));
  EXPECT_TRUE(MayAdmit({kNormal, 2000}, heavy, 4, 2));
  EXPECT_FALSE(MayAdmit({kNormal, 1000}, heavy, 4, 2)) << "the heavy peer's own fifth waits";
  // Two peers with one slot each: a third peer's job would rank after both, beyond a width of 2.
  EXPECT_FALSE(MayAdmit({kNormal, 3000}, {{kNormal, 1000}, {kNormal, 2000}}, 2, 2));
  // In the step the newcomer's first slot goes before the heavy peer's second.
  std::vector<SlotView> busy;
  for (size_t i = 0; i < 4; ++i) busy.push_back({.slot = i, .request_class = kNormal, .peer_uid = 1000, .admitted = i, .generating = true});
  busy.push_back({.slot = 4, .request_class = kNormal, .peer_uid = 2000, .admitted = 9, .prefilling = true});
  const StepChoice prompt = ChooseStep(busy, {.decode_width = 4}, 1);
  EXPECT_EQ(prompt.prefill, (std::vector<size_t>{4}));
  EXPECT_EQ(prompt.decode, (std::vector<size_t>{0, 1, 2, 3}));  // its prompt beside the four
  busy[4].prefilling = false;
  busy[4].generating = true;
  // Once it decodes, one of the heavy peer's later slots pauses for it (of those, the one that
  // keeps the decoding sequences consecutive: 1-4).
  const StepChoice choice = ChooseStep(busy, {.decode_width = 4}, 2);
  EXPECT_EQ(choice.decode, (std::vector<size_t>{3, 4, 1, 2}));
  EXPECT_EQ(choice.paused, (std::vector<size_t>{0}));
}

// A plan of moves as (from, to) pairs, for comparing.
using Pairs = std::vector<std::pair<size_t, size_t>>;
Pairs moves(const std::vector<SlotMove>& plan) {
  Pairs out;
  for (const SlotMove& m : plan) out.emplace_back(m.from, m.to);
  return out;
}

// A person's request decoding on 4 while 3 is free: it moves to 3, and 0-3 decode in one run.
// Of several moves that join runs alike, the cheapest copy; none where no move joins runs.
TEST(StepPolicy, ADecodingSlotMovesIntoAFreeSequenceThatJoinsItsRuns) {
  EXPECT_EQ(moves(ChooseMoves({4, 0, 1, 2}, {{4, 120}, {0, 900}, {1, 900}, {2, 900}}, {}, {{3, 0}})), (Pairs{{4, 3}}));
  // 0 1 | 3 4 with 2 free: 0 or 4 could move to 2; 4 holds fewer tokens.
  EXPECT_EQ(moves(ChooseMoves({0, 1, 3, 4}, {{0, 800}, {1, 800}, {3, 800}, {4, 100}}, {}, {{2, 0}})), (Pairs{{4, 2}}));
  // Only 2 joins 0 1 (3 and 5 leave a gap), whatever it caches.
  EXPECT_EQ(moves(ChooseMoves({0, 1, 4}, {{4, 10}}, {}, {{2, 500}, {3, 0}, {5, 0}})), (Pairs{{4, 2}}));
  // 0 and 3 both join 1 2: 3 caches nothing.
  EXPECT_EQ(moves(ChooseMoves({1, 2, 5}, {{5, 10}}, {}, {{0, 500}, {3, 0}})), (Pairs{{5, 3}}));
  EXPECT_TRUE(ChooseMoves({0, 1, 2, 3}, {{3, 10}}, {}, {{4, 0}}).empty()) << "already one run";
  EXPECT_TRUE(ChooseMoves({0, 1, 2, 4}, {{0, 10}}, {}, {{5, 0}}).empty()) << "no free sequence joins them";
  EXPECT_TRUE(ChooseMoves({0, 1, 2, 4}, {}, {}, {{3, 0}}).empty()) << "nothing may move";
  EXPECT_TRUE(ChooseMoves({0, 2}, {{7, 10}}, {}, {{1, 0}}).empty()) << "a slot outside the step does not move";
}

// The gap held by a slot that sits the step out (a background prompt computed ahead, waiting
// for the person's request to end): it moves aside to a free sequence, then the person's
// request moves into its place. With no free sequence to move it to, nothing moves; a gap
// that is free costs one move and goes first where the copies are alike.
TEST(StepPolicy, ASlotSittingOutInTheGapMovesAsideForADecodingOne) {
  // 0 1 2 | 4 decode, 3 waits, 5 and 6 free (6 caches less).
  EXPECT_EQ(moves(ChooseMoves({4, 0, 1, 2}, {{4, 60}, {0, 400}, {1, 400}, {2, 400}}, {{3, 20}}, {{5, 30}, {6, 0}})),
            (Pairs{{3, 6}, {4, 3}}));
  EXPECT_TRUE(ChooseMoves({4, 0, 1, 2}, {{4, 60}}, {{3, 20}}, {}).empty()) << "nowhere to move 3 aside";
  // 0 | 2 3 4 with 1 waiting and 5 free: 0 could move to 5 (400 tokens copied); moving 1 aside
  // and the person's request into its place copies 80.
  EXPECT_EQ(moves(ChooseMoves({4, 0, 2, 3}, {{4, 60}, {0, 400}, {2, 400}, {3, 400}}, {{1, 20}}, {{5, 0}})),
            (Pairs{{1, 5}, {4, 1}}));
  // 1 2 | 5 with 3 waiting and 0 free: one move of 60 tokens (to 0) beats two of 60 + 20 (to 3).
  EXPECT_EQ(moves(ChooseMoves({1, 2, 5}, {{5, 60}}, {{3, 20}}, {{0, 0}, {4, 0}})), (Pairs{{5, 0}}));
}

// The step policy moves before it leaves a run out: background slots on 0, 2 and 3 and a
// person's request on 4, sequence 1 free. Moving the person's request (fewer tokens) to 1 makes
// one run of four, where leaving 0 out would decode three. Only with a pass per run, while
// the width is full, and with a sequence free.
TEST(StepPolicy, AMoveThatJoinsTheRunsGoesBeforeLeavingARunOut) {
  std::vector<SlotView> busy;
  for (size_t slot : {0, 2, 3}) {
    busy.push_back({.slot = slot, .request_class = kBackground, .peer_uid = 1000, .admitted = slot, .generating = true,
                    .movable = true, .tokens = 400});
  }
  busy.push_back({.slot = 4, .request_class = kInteractive, .peer_uid = 2000, .admitted = 9, .generating = true,
                  .movable = true, .tokens = 60});
  const StepPolicyOptions options{.decode_width = 4, .runs_cost_passes = true};
  const StepChoice moved = ChooseStep(busy, options, 1, {{1, 0}});
  ASSERT_EQ(moved.moves.size(), 1u);
  EXPECT_EQ(moved.moves[0].from, 4u);
  EXPECT_EQ(moved.moves[0].to, 1u);
  EXPECT_EQ(moved.decode, (std::vector<size_t>{1, 0, 2, 3})) << "the person's request first, under its new index";
  EXPECT_TRUE(moved.paused.empty());
  // No sequence free: sequence 0 sits out instead.
  const StepChoice left_out = ChooseStep(busy, options, 1, {});
  EXPECT_TRUE(left_out.moves.empty());
  EXPECT_EQ(left_out.decode, (std::vector<size_t>{4, 2, 3}));
  EXPECT_EQ(left_out.paused, (std::vector<size_t>{0}));
  // Nothing moves without a pass per run, or below the width (a prompt may take the gap).
  EXPECT_TRUE(ChooseStep(busy, {.decode_width = 4}, 1, {{1, 0}}).moves.empty());
  EXPECT_TRUE(ChooseStep(busy, {.decode_width = 5, .runs_cost_passes = true}, 1, {{1, 0}}).moves.empty());
  // Nor without a higher class in the step.
  busy.back().request_class = kBackground;
  EXPECT_TRUE(ChooseStep(busy, options, 1, {{1, 0}}).moves.empty());
}

// Background jobs decoding on 0-2 (300 tokens each, movable) and a background prompt on 5
// holding `prompt_tokens`, admitted `admitted`-th.
std::vector<SlotView> ThreeDecodingAndAPromptOn5(size_t prompt_tokens, uint64_t admitted) {
  std::vector<SlotView> busy;
  for (size_t slot : {0, 1, 2}) {
    busy.push_back({.slot = slot, .request_class = kBackground, .admitted = slot, .generating = true, .movable = true,
                    .tokens = 300});
  }
  busy.push_back({.slot = 5, .request_class = kBackground, .admitted = admitted, .prefilling = true, .movable = true,
                  .tokens = prompt_tokens});
  return busy;
}

// A prompt goes where its tokens will decode beside the others: on 5, with 0-2 decoding and 3
// free, it moves to 3 before its first chunk (nothing else needed: no class, no full width).
TEST(StepPolicy, APromptMovesToWhereItWillDecodeBesideTheOthers) {
  std::vector<SlotView> busy = ThreeDecodingAndAPromptOn5(10, 9);
  const StepPolicyOptions options{.decode_width = 4, .runs_cost_passes = true};
  const StepChoice placed = ChooseStep(busy, options, 1, {{3, 40}, {4, 0}, {6, 0}});
  EXPECT_EQ(moves(placed.moves), (Pairs{{5, 3}})) << "3 joins 0-2; 4 does not";
  EXPECT_EQ(placed.prefill, (std::vector<size_t>{3}));
  EXPECT_EQ(placed.decode, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(ChooseStep(busy, {.decode_width = 4}, 1, {{3, 0}}).moves.empty()) << "no pass per run";
  busy.back().movable = false;
  EXPECT_TRUE(ChooseStep(busy, options, 1, {{3, 0}}).moves.empty()) << "too costly to copy";
  busy.back().movable = true;
  busy.back().slot = 3;
  EXPECT_TRUE(ChooseStep(busy, options, 1, {{4, 0}, {5, 0}}).moves.empty()) << "already beside them";
}

// A person's last request leaves its prompt cached (the next one reuses it): a background
// move keeps it, moving it aside to an empty free sequence first, or takes another sequence;
// a move of the person's own class may drop it.
TEST(StepPolicy, AMoveKeepsTheCacheAHigherClassLeft) {
  const MoveCandidate voice_cache{3, 24, kInteractive};
  // A background prompt on 5, 0-2 decoding: into 3 after the cache there moves to 4.
  std::vector<SlotView> busy = ThreeDecodingAndAPromptOn5(0, 9);
  const StepPolicyOptions options{.decode_width = 4, .runs_cost_passes = true};
  EXPECT_EQ(moves(ChooseStep(busy, options, 1, {voice_cache, {4, 0}}).moves), (Pairs{{3, 4}, {5, 3}}));
  EXPECT_TRUE(ChooseStep(busy, options, 1, {voice_cache, {4, 50, kBackground}}).moves.empty())
      << "no empty sequence to keep it in: the prompt stays";
  // A background cache is dropped as admission drops one.
  EXPECT_EQ(moves(ChooseStep(busy, options, 1, {{3, 24, kBackground}, {4, 0}}).moves), (Pairs{{5, 3}}));
  // Decoding slots: a background one keeps the cache, the person's own request may drop it.
  EXPECT_EQ(moves(ChooseMoves({0, 1, 2, 4}, {{0, 10, kBackground}}, {}, {voice_cache, {5, 0}})), (Pairs{{3, 5}, {0, 3}}));
  EXPECT_EQ(moves(ChooseMoves({0, 1, 2, 4}, {{4, 30, kInteractive}}, {}, {voice_cache, {5, 0}})), (Pairs{{4, 3}}));
  // A slot sitting out moves aside only to a sequence whose cache its class may drop.
  EXPECT_TRUE(ChooseMoves({0, 1, 2, 4}, {{4, 30, kInteractive}}, {{3, 0, kBackground}}, {{5, 24, kInteractive}}).empty());
}

// A step that computes a person's prompt moves nothing (the copies would come before its first
// token): the same gap and free sequence as above, with the person's prompt in the step.
TEST(StepPolicy, NothingMovesInTheStepOfAPersonsPrompt) {
  std::vector<SlotView> busy = ThreeDecodingAndAPromptOn5(0, 8);
  const StepPolicyOptions options{.decode_width = 5, .runs_cost_passes = true};
  ASSERT_EQ(moves(ChooseStep(busy, options, 1, {{3, 0}, {4, 0}}).moves), (Pairs{{5, 3}}));
  busy.push_back({.slot = 6, .request_class = kInteractive, .admitted = 9, .prefilling = true, .movable = true, .tokens = 0});
  const StepChoice choice = ChooseStep(busy, options, 1, {{3, 0}, {4, 0}});
  EXPECT_TRUE(choice.moves.empty());
  EXPECT_EQ(choice.prefill.front(), 6u) << "the person's prompt goes first";
}

}  // namespace
}  // namespace llmd::sched
