// Engine::ParkSequence and UnparkSequence on the real llama.cpp engine, on the dense tiny model
// (attention KV) and the tiny hybrid (Gated DeltaNet recurrent state plus attention): a
// sequence parked in host memory mid-answer, while another sequence uses the cache, and put
// back, goes on exactly as the same answer generated without a pause. And a sequence moved
// mid-answer as the scheduler moves one next to the others (CopySequence into a free sequence,
// the old one emptied: engine_worker_move.cc) goes on exactly as if it had stayed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/llama_test_engine.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using engine::DecodeItem;
using engine::TokenId;

// Decodes `tokens` into `sequence` from position `at` and samples greedily after the last.
TokenId DecodeAndSample(engine::Engine& e, engine::Sampler& sampler, int32_t sequence,
                        const std::vector<TokenId>& tokens, int32_t at) {
  std::vector<DecodeItem> items;
  for (size_t i = 0; i < tokens.size(); ++i) {
    items.push_back({sequence, at + static_cast<int32_t>(i), tokens[i], i + 1 == tokens.size()});
  }
  const Status st = e.DecodeBatch(items);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return sampler.Sample({.index = static_cast<int32_t>(items.size()) - 1});
}

// Generates `n` tokens after what `sequence` holds (`held` tokens, `next` sampled last).
std::vector<TokenId> Generate(engine::Engine& e, engine::Sampler& sampler, int32_t sequence, int32_t held,
                              TokenId* next, int n) {
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(*next);
    *next = DecodeAndSample(e, sampler, sequence, {*next}, held++);
  }
  return out;
}

// The greedy answer of `n` tokens to `prompt` on `sequence`, uninterrupted; the sequence is
// emptied after.
std::vector<TokenId> Uninterrupted(engine::Engine& e, const std::vector<TokenId>& prompt, int32_t sequence, int n) {
  auto sampler = e.NewSampler(engine::SamplingParams::Greedy(), {});
  EXPECT_TRUE(sampler.has_value());
  if (!sampler.has_value()) return {};
  TokenId next = DecodeAndSample(e, **sampler, sequence, prompt, 0);
  std::vector<TokenId> out = Generate(e, **sampler, sequence, static_cast<int32_t>(prompt.size()), &next, n);
  EXPECT_TRUE(e.TruncateSequence(sequence, 0).ok());
  return out;
}

class SequenceParking : public ::testing::TestWithParam<std::string> {};

TEST_P(SequenceParking, AParkedSequenceGoesOnAsIfNeverPaused) {
  auto e = LoadTestEngine(GetParam(), /*context_tokens=*/512, /*sequences=*/2);
  ASSERT_NE(e, nullptr);
  auto prompt = e->Tokenize("The library opens at nine on weekdays and at ten on Sundays because", true, false);
  ASSERT_TRUE(prompt.has_value());
  const auto n = static_cast<int32_t>(prompt->size());
  constexpr int kBefore = 6, kAfter = 6;

  const std::vector<TokenId> reference = Uninterrupted(*e, *prompt, 0, kBefore + kAfter);

  // On sequence 1, parked after kBefore tokens while sequence 0 decodes another prompt.
  auto sampler = e->NewSampler(engine::SamplingParams::Greedy(), {});
  ASSERT_TRUE(sampler.has_value());
  TokenId next = DecodeAndSample(*e, **sampler, 1, *prompt, 0);
  std::vector<TokenId> paused = Generate(*e, **sampler, 1, n, &next, kBefore);
  auto parked = e->ParkSequence(1);
  ASSERT_TRUE(parked.has_value()) << parked.error().ToString();
  EXPECT_GT(parked->size(), 0u);
  auto other = e->Tokenize("Something else entirely, to fill the cache for a while.", true, false);
  ASSERT_TRUE(other.has_value());
  auto other_sampler = e->NewSampler(engine::SamplingParams::Greedy(), {});
  ASSERT_TRUE(other_sampler.has_value());
  DecodeAndSample(*e, **other_sampler, 0, *other, 0);
  // Parked, the sequence is empty: its first position takes a token again.
  ASSERT_TRUE(e->DecodeBatch({{1, 0, (*prompt)[0], false}}).ok());
  ASSERT_TRUE(e->TruncateSequence(1, 0).ok());

  ASSERT_TRUE(e->UnparkSequence(1, *parked).ok());
  const std::vector<TokenId> resumed = Generate(*e, **sampler, 1, n + kBefore, &next, kAfter);
  paused.insert(paused.end(), resumed.begin(), resumed.end());
  EXPECT_EQ(paused, reference);
}

TEST_P(SequenceParking, ASequenceMovedMidAnswerGoesOnAsIfItStayed) {
  auto e = LoadTestEngine(GetParam(), /*context_tokens=*/512, /*sequences=*/3);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->model_info().memory.stream_per_sequence);
  auto prompt = e->Tokenize("The library opens at nine on weekdays and at ten on Sundays because", true, false);
  ASSERT_TRUE(prompt.has_value());
  const auto n = static_cast<int32_t>(prompt->size());
  constexpr int kBefore = 6, kAfter = 6;

  const std::vector<TokenId> reference = Uninterrupted(*e, *prompt, 2, kBefore + kAfter);

  // On sequence 2, moved to 0 after kBefore tokens; sequence 0 held another prompt before.
  auto other = e->Tokenize("Something else entirely, cached where the move goes.", true, false);
  ASSERT_TRUE(other.has_value());
  ASSERT_TRUE(e->DecodeBatch({{0, 0, (*other)[0], false}, {0, 1, (*other)[1], false}}).ok());
  auto sampler = e->NewSampler(engine::SamplingParams::Greedy(), {});
  ASSERT_TRUE(sampler.has_value());
  TokenId next = DecodeAndSample(*e, **sampler, 2, *prompt, 0);
  std::vector<TokenId> moved = Generate(*e, **sampler, 2, n, &next, kBefore);
  ASSERT_TRUE(e->CopySequence(2, 0).ok());
  ASSERT_TRUE(e->TruncateSequence(2, 0).ok());
  // The old sequence is empty: its first position takes a token again.
  ASSERT_TRUE(e->DecodeBatch({{2, 0, (*prompt)[0], false}}).ok());
  const std::vector<TokenId> after = Generate(*e, **sampler, 0, n + kBefore, &next, kAfter);
  moved.insert(moved.end(), after.begin(), after.end());
  EXPECT_EQ(moved, reference);
}

INSTANTIATE_TEST_SUITE_P(DenseAndHybrid, SequenceParking, ::testing::Values(TinyModelPath(), Qwen35TinyPath()),
                         [](const auto& info) { return info.index == 0 ? std::string("Dense") : std::string("Hybrid"); });

}  // namespace
}  // namespace llmd::testing
