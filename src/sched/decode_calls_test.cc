#include "sched/decode_calls.h"

#include <gtest/gtest.h>

#include <vector>

namespace llmd::sched {
namespace {

using engine::DecodeItem;

// `n` items of `sequence` from position `from`.
void Add(std::vector<DecodeItem>* items, int32_t sequence, int32_t n, int32_t from = 0) {
  for (int32_t i = 0; i < n; ++i) items->push_back({sequence, from + i, 100, i + 1 == n});
}

// Per call: the sequences in it and how many tokens each has.
std::vector<std::vector<std::pair<int32_t, int32_t>>> Shape(const std::vector<std::vector<DecodeItem>>& calls) {
  std::vector<std::vector<std::pair<int32_t, int32_t>>> out;
  for (const auto& call : calls) {
    std::vector<std::pair<int32_t, int32_t>> shape;
    for (const auto& item : call) {
      if (shape.empty() || shape.back().first != item.sequence) shape.emplace_back(item.sequence, 0);
      ++shape.back().second;
    }
    out.push_back(shape);
  }
  return out;
}

TEST(ShapeStableCalls, OneTokenStepsShareACallAndEachPromptChunkHasItsOwn) {
  std::vector<DecodeItem> items;
  Add(&items, 0, 1, 40);
  Add(&items, 2, 1, 17);
  Add(&items, 1, 30);
  Add(&items, 3, 12);
  const auto calls = ShapeStableCalls(items, 512);
  EXPECT_EQ(Shape(calls), (std::vector<std::vector<std::pair<int32_t, int32_t>>>{
                              {{0, 1}, {2, 1}}, {{1, 30}}, {{3, 12}}}));
  EXPECT_EQ(calls[0][0].position, 40);
  EXPECT_TRUE(calls[1].back().logits);
}

TEST(ShapeStableCalls, SequencesOfOneLengthShareACallOnlyWhileOnePieceHoldsThem) {
  std::vector<DecodeItem> items;
  Add(&items, 0, 5);  // a pending token and a draft of 4
  Add(&items, 1, 5);
  Add(&items, 2, 300);
  Add(&items, 3, 300);
  EXPECT_EQ(Shape(ShapeStableCalls(items, 512)), (std::vector<std::vector<std::pair<int32_t, int32_t>>>{
                                                     {{0, 5}, {1, 5}}, {{2, 300}}, {{3, 300}}}));
  EXPECT_EQ(Shape(ShapeStableCalls(items, 8)),
            (std::vector<std::vector<std::pair<int32_t, int32_t>>>{{{0, 5}}, {{1, 5}}, {{2, 300}}, {{3, 300}}}));
}

TEST(ShapeStableCalls, NothingInNothingOut) { EXPECT_TRUE(ShapeStableCalls({}, 512).empty()); }

TEST(GenerationThenPromptCalls, GeneratedTokensAndEachSequencesPromptChunkHaveCallsOfTheirOwn) {
  std::vector<DecodeItem> items;
  Add(&items, 2, 1, 17);                                // a generation step
  items.push_back({1, 0, 7, false, 9});                 // a one-token prompt chunk
  Add(&items, 0, 3, 40);                                // a pending token and a draft of 2
  items.push_back({3, 5, 8, false, 7});
  items.push_back({3, 6, 9, true, 7});
  const auto calls = GenerationThenPromptCalls(items);
  EXPECT_EQ(Shape(calls), (std::vector<std::vector<std::pair<int32_t, int32_t>>>{
                              {{2, 1}, {0, 3}}, {{1, 1}}, {{3, 2}}}));
  for (const auto& item : calls[0]) EXPECT_EQ(item.prompt_tokens, 0);
  EXPECT_EQ(calls[1][0].prompt_tokens, 9);
  EXPECT_EQ(calls[2].back().position, 6);
  EXPECT_TRUE(calls[2].back().logits);
}

TEST(GenerationThenPromptCalls, AStepOfOneKindIsOneCall) {
  std::vector<DecodeItem> items;
  Add(&items, 0, 1, 3);
  Add(&items, 1, 1, 9);
  EXPECT_EQ(GenerationThenPromptCalls(items).size(), 1u);
  EXPECT_TRUE(GenerationThenPromptCalls({}).empty());
}

TEST(OrderBySequence, SortsBySequenceAndKeepsEachSequencesOwnOrder) {
  std::vector<DecodeItem> items = {{2, 7, 70, true}, {0, 3, 30, false}, {2, 8, 80, true}, {1, 5, 50, true}, {0, 4, 40, true}};
  OrderBySequence(&items);
  std::vector<std::pair<int32_t, int32_t>> order;
  for (const auto& item : items) order.emplace_back(item.sequence, item.position);
  EXPECT_EQ(order, (std::vector<std::pair<int32_t, int32_t>>{{0, 3}, {0, 4}, {1, 5}, {2, 7}, {2, 8}}));
}

}  // namespace
}  // namespace llmd::sched
