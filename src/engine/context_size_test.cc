#include "engine/context_size.h"

#include <gtest/gtest.h>

namespace llmd::engine {
namespace {

// Qwen3-0.6B's shape: 28 attention layers, 8 KV heads of 128: 112 KiB a token in F16.
format::GgufSummary Dense() {
  format::GgufSummary g;
  g.block_count = 28;
  g.context_length = 40960;
  g.head_count_kv = 8;
  g.key_length = g.value_length = 128;
  return g;
}

TEST(ContextSize, KvBytesCountTheAttentionLayersOnly) {
  EXPECT_EQ(KvBytesPerToken(Dense(), 2.0), 28u * 8 * 256 * 2);
  format::GgufSummary hybrid = Dense();
  hybrid.block_count = 24;
  hybrid.full_attention_interval = 4;  // layers 3, 7, ..., 23 hold KV
  EXPECT_EQ(KvBytesPerToken(hybrid, 2.0), 6u * 8 * 256 * 2);
  hybrid.nextn_layers = 1;  // an MTP block after the trunk: not part of it
  hybrid.block_count = 25;
  EXPECT_EQ(KvBytesPerToken(hybrid, 2.0), 6u * 8 * 256 * 2);
}

TEST(ContextSize, AnExplicitContextIsAStreamPerSequence) {
  EngineConfig c;
  c.context_tokens = 2048;
  c.sequences = 4;
  const EngineConfig r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.context_tokens, 2048);
  EXPECT_EQ(r.pool_tokens, 0);
}

TEST(ContextSize, AutomaticIsOnePoolOfTheTrainedContext) {
  EngineConfig c;
  c.sequences = 4;
  const EngineConfig r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.pool_tokens, 40960);
  EXPECT_EQ(r.context_tokens, 40960) << "one request may use the whole pool";
}

TEST(ContextSize, TheBudgetShrinksThePoolInWholeBlocksNeverBelowTheMinimum) {
  EngineConfig c;
  const uint64_t per_token = KvBytesPerToken(Dense(), 2.0);
  c.kv_budget_bytes = per_token * 10000;
  EngineConfig r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.pool_tokens, 9984) << "10000 cells, down to whole 256-cell blocks";
  c.kv_budget_bytes = per_token * 100;
  r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.pool_tokens, kMinAutoContext);
  c.kv_budget_bytes = per_token * 1000000;
  r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.pool_tokens, 40960) << "never past the trained context";
}

TEST(ContextSize, ASmallTrainedContextOrNoneAtAll) {
  format::GgufSummary g = Dense();
  g.context_length = 2048;
  EngineConfig c;
  c.kv_budget_bytes = 1;
  EXPECT_EQ(ResolveContext(c, g, 2.0).pool_tokens, 2048) << "the minimum never exceeds what the model knows";
  g.context_length = 0;
  EXPECT_EQ(ResolveContext(EngineConfig{}, g, 2.0).pool_tokens, kFallbackContext);
}

TEST(ContextSize, HybridModelsGetThePoolInHostMemoryAndACachePerSequenceOnADevice) {
  format::GgufSummary g = Dense();
  g.ssm_inner_size = 128;
  g.full_attention_interval = 4;
  EngineConfig c;
  c.sequences = 4;
  const EngineConfig host = ResolveContext(c, g, 2.0);
  EXPECT_EQ(host.pool_tokens, 40960);
  EXPECT_EQ(host.context_tokens, 40960) << "one request may use the whole pool";
  c.gpu_layers = -1;
  c.devices = {"CUDA0"};
  const EngineConfig device = ResolveContext(c, g, 2.0);
  EXPECT_EQ(device.pool_tokens, 0);
  EXPECT_EQ(device.context_tokens, 40960 / 4);
  EXPECT_FALSE(KvInHostMemory(device));
  EXPECT_TRUE(KvInHostMemory(host));
}

TEST(ContextSize, EmbeddingModelsGetAStreamOfTheirOwn) {
  EngineConfig c;
  c.embeddings = true;
  const EngineConfig r = ResolveContext(c, Dense(), 2.0);
  EXPECT_EQ(r.pool_tokens, 0);
  EXPECT_EQ(r.context_tokens, kAutoEmbeddingContext);
}

// The bytes a cache reports: a pool of streams counts the pool's attention cells, not every
// stream's; a hybrid's recurrent states count whole, and as resident once anything is written.
TEST(SequenceKvBytes, APoolCountsItsCellsAndRecurrentStatesCountWhole) {
  // 4 streams of 1,000 cells at 100 bytes a cell, and 50,000 bytes of recurrent states.
  const KvBytes hybrid = SequenceKvBytes(450'000, 100, 4'000, 1'000, 0);
  EXPECT_EQ(hybrid.reserved, 50'000u + 100'000u);
  EXPECT_EQ(hybrid.resident, 0u);
  EXPECT_EQ(SequenceKvBytes(450'000, 100, 4'000, 1'000, 30).resident, 50'000u + 3'000u);
  // A dense cache per sequence (no pool): all of it reserved, the written cells resident.
  const KvBytes dense = SequenceKvBytes(400'000, 100, 4'000, 0, 250);
  EXPECT_EQ(dense.reserved, 400'000u);
  EXPECT_EQ(dense.resident, 25'000u);
  EXPECT_EQ(SequenceKvBytes(400'000, 100, 4'000, 0, 10'000).resident, 400'000u) << "never above the cache";
}

}  // namespace
}  // namespace llmd::engine
