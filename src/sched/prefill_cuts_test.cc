#include "sched/prefill_cuts.h"

#include <gtest/gtest.h>

#include <vector>

namespace llmd::sched {
namespace {

constexpr engine::TokenId kStart = 1;

// A prompt of `n` ordinary tokens with message starts at `starts`.
std::vector<engine::TokenId> Prompt(size_t n, const std::vector<size_t>& starts) {
  std::vector<engine::TokenId> p(n, 100);
  for (size_t s : starts) p[s] = kStart;
  return p;
}

TEST(PrefillCuts, AShortPromptIsCutOnlyBeforeItsLastToken) {
  EXPECT_EQ(PrefillCuts(Prompt(20, {0, 9}), kStart, 512), (std::vector<size_t>{19}));
  EXPECT_TRUE(PrefillCuts(Prompt(1, {}), kStart, 512).empty());
  EXPECT_EQ(PrefillCuts(Prompt(2, {}), kStart, 512), (std::vector<size_t>{1}));
}

TEST(PrefillCuts, MessageStartsFarEnoughApartAreCuts) {
  // 40 and 100 are kMinMessageSpan or more after the previous cut; 50 and 120 are not.
  EXPECT_EQ(PrefillCuts(Prompt(200, {0, 40, 50, 100, 120}), kStart, 512), (std::vector<size_t>{40, 100, 199}));
  EXPECT_EQ(MessageCuts(Prompt(200, {0, 40, 50, 100, 120}), {40, 100, 199}, kStart), (std::vector<size_t>{40, 100}));
  EXPECT_EQ(PrefillCuts(Prompt(200, {40, 100}), -1, 512), (std::vector<size_t>{199})) << "no message start token";
}

TEST(PrefillCuts, LongRunsAreCutEveryMaxChunkFromThePreviousCut) {
  EXPECT_EQ(PrefillCuts(Prompt(100, {}), kStart, 24), (std::vector<size_t>{24, 48, 72, 96, 99}));
  // A message start is a cut however near a chunk cut it is, if far enough from the previous
  // message cut: a system prompt's end stays a cut, whatever its length.
  EXPECT_EQ(PrefillCuts(Prompt(100, {40}), kStart, 24), (std::vector<size_t>{24, 40, 64, 88, 99}));
  EXPECT_EQ(PrefillCuts(Prompt(130, {60, 70}), kStart, 24), (std::vector<size_t>{24, 48, 60, 84, 108, 129}));
  EXPECT_EQ(PrefillCuts(Prompt(130, {90}), kStart, 50), (std::vector<size_t>{50, 90, 129}));
}

TEST(PrefillCuts, AMessageStartNearTheEndStandsInForTheLastTokenCut) {
  // The generation prompt's start 4 tokens before the end: one call computes those 5 tokens.
  EXPECT_EQ(PrefillCuts(Prompt(100, {40, 95}), kStart, 512), (std::vector<size_t>{40, 95}));
  EXPECT_EQ(PrefillCuts(Prompt(100, {83}), kStart, 512), (std::vector<size_t>{83})) << "kNearEnd before it";
  EXPECT_EQ(PrefillCuts(Prompt(100, {82}), kStart, 512), (std::vector<size_t>{82, 99})) << "one further";
  EXPECT_EQ(PrefillCuts(Prompt(100, {90}), kStart, 24), (std::vector<size_t>{24, 48, 72, 90}));
  EXPECT_EQ(MessageCuts(Prompt(100, {40, 95}), {40, 95}, kStart), (std::vector<size_t>{40, 95}));
}

// What prefix reuse relies on: the cuts below any length are the same for every prompt that
// shares the tokens up to it, whatever follows.
TEST(PrefillCuts, EveryCutButTheLastDependsOnlyOnTheTokensBeforeIt) {
  const auto base = Prompt(300, {0, 35, 80, 81, 150, 230});
  const std::vector<size_t> whole = PrefillCuts(base, kStart, 64);
  for (size_t n = 2; n < base.size(); ++n) {
    std::vector<engine::TokenId> prefix(base.begin(), base.begin() + static_cast<ptrdiff_t>(n));
    std::vector<size_t> cuts = PrefillCuts(prefix, kStart, 64);
    if (cuts.back() == n - 1) cuts.pop_back();  // its own last-token cut
    std::vector<size_t> expected;
    for (size_t c : whole) {
      if (c < n - 1) expected.push_back(c);
    }
    EXPECT_EQ(cuts, expected) << "prefix of " << n;
  }
  EXPECT_TRUE(IsCut(whole, 35));
  EXPECT_FALSE(IsCut(whole, 81));
}

}  // namespace
}  // namespace llmd::sched
