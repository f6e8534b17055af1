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

}  // namespace
}  // namespace llmd::sched
