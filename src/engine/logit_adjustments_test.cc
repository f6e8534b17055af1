// LogitAdjustments' window and arithmetic, by token id (the parity with llama.cpp's own
// samplers is tests/…/logit_adjustments_parity_test.cc).
#include "engine/logit_adjustments.h"

#include <gtest/gtest.h>

#include <vector>

namespace llmd::engine {
namespace {

std::vector<float> Applied(const LogitAdjustments& adjust, std::vector<float> logits) {
  adjust.Apply(static_cast<int32_t>(logits.size()), [&](int32_t id) -> float& { return logits[id]; });
  return logits;
}

SamplingParams Penalties(float repeat, float frequency = 0, float presence = 0) {
  SamplingParams p;
  p.repeat_penalty = repeat;
  p.frequency_penalty = frequency;
  p.presence_penalty = presence;
  return p;
}

TEST(LogitAdjustments, RepeatPenaltyLowersSeenTokensOfEitherSign) {
  LogitAdjustments adjust(Penalties(2.0f));
  adjust.Accept(1);
  adjust.Accept(2);
  EXPECT_EQ(Applied(adjust, {1.0f, 4.0f, -3.0f, 5.0f}), (std::vector<float>{1.0f, 2.0f, -6.0f, 5.0f}));
}

TEST(LogitAdjustments, FrequencyCountsOccurrencesAndPresenceCountsOnce) {
  LogitAdjustments adjust(Penalties(1.0f, 0.5f, 0.25f));
  for (TokenId t : {0, 0, 0, 2}) adjust.Accept(t);
  EXPECT_EQ(Applied(adjust, {0.0f, 0.0f, 0.0f}), (std::vector<float>{-1.75f, 0.0f, -0.75f}));
}

TEST(LogitAdjustments, OnlyTheLastSixtyFourTokensCount) {
  LogitAdjustments adjust(Penalties(1.0f, 1.0f));
  adjust.Accept(0);
  for (int i = 0; i < LogitAdjustments::kPenaltyWindow - 1; ++i) adjust.Accept(1);
  EXPECT_EQ(Applied(adjust, {0.0f, 0.0f}), (std::vector<float>{-1.0f, -63.0f}));
  adjust.Accept(1);  // token 0 leaves the window
  EXPECT_EQ(Applied(adjust, {0.0f, 0.0f}), (std::vector<float>{0.0f, -64.0f}));
}

TEST(LogitAdjustments, BiasesAddUpAndComeBeforeThePenalty) {
  SamplingParams p = Penalties(2.0f);
  p.logit_bias = {{0, 3.0f}, {1, -100.0f}};
  LogitAdjustments adjust(p, {{0, 1.0f}});
  adjust.Accept(0);
  // token 0: (-2 + 3 + 1) / 2; token 1: -100 + 1 and never seen.
  EXPECT_EQ(Applied(adjust, {-2.0f, 1.0f}), (std::vector<float>{1.0f, -99.0f}));
}

TEST(LogitAdjustments, NeutralParametersChangeNothingAndIdsOutsideAreSkipped) {
  LogitAdjustments neutral(Penalties(1.0f));
  neutral.Accept(0);
  EXPECT_FALSE(neutral.any());
  EXPECT_EQ(Applied(neutral, {0.5f}), (std::vector<float>{0.5f}));
  SamplingParams p = Penalties(1.5f);
  p.logit_bias = {{7, 1.0f}};
  LogitAdjustments outside(p);
  outside.Accept(9);
  EXPECT_EQ(Applied(outside, {0.5f, 0.5f}), (std::vector<float>{0.5f, 0.5f}));
}

}  // namespace
}  // namespace llmd::engine
