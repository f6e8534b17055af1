#include "engine/context_size.h"

#include <algorithm>
#include <cmath>

namespace llmd::engine {

bool KvInHostMemory(const EngineConfig& config) {
  return config.gpu_layers == 0 || (config.devices.empty() && config.rpc_servers.empty());
}

uint64_t KvBytesPerToken(const format::GgufSummary& gguf, double kv_bytes_per_value) {
  const uint32_t trunk = gguf.block_count - std::min(gguf.nextn_layers, gguf.block_count);
  uint32_t attention_layers = 0;
  for (uint32_t i = 0; i < trunk; ++i) {
    if (gguf.full_attention_interval == 0 || (i + 1) % gguf.full_attention_interval == 0) ++attention_layers;
  }
  return static_cast<uint64_t>(std::ceil(static_cast<double>(attention_layers) * gguf.head_count_kv *
                                         (gguf.key_length + gguf.value_length) * kv_bytes_per_value));
}

KvBytes SequenceKvBytes(uint64_t bytes, uint64_t attention_per_cell, uint64_t cells, uint64_t pool,
                        uint64_t written) {
  cells = std::max<uint64_t>(1, cells);
  const uint64_t attention = std::min(bytes, attention_per_cell * cells);
  const uint64_t states = bytes - attention;
  return {.reserved = states + (pool > 0 ? attention / cells * pool : attention),
          .resident = (written > 0 ? states : 0) + std::min(attention, attention / cells * written)};
}

EngineConfig ResolveContext(const EngineConfig& config, const format::GgufSummary& gguf,
                            double kv_bytes_per_value) {
  EngineConfig out = config;
  if (out.context_tokens > 0) return out;
  const int32_t trained = gguf.context_length > 0
                              ? static_cast<int32_t>(std::min<uint32_t>(gguf.context_length, 1u << 24))
                              : kFallbackContext;
  if (config.embeddings) {
    out.context_tokens = std::min(trained, kAutoEmbeddingContext);
    out.pool_tokens = 0;
    return out;
  }
  int64_t cells = trained;
  const uint64_t per_token = KvBytesPerToken(gguf, kv_bytes_per_value);
  if (config.kv_budget_bytes > 0 && per_token > 0) {
    const auto fits = static_cast<int64_t>(config.kv_budget_bytes / per_token);
    // Whole 256-cell blocks, as llama.cpp pads its cache.
    cells = std::min<int64_t>(cells, std::max<int64_t>(std::min(kMinAutoContext, trained), fits / 256 * 256));
  }
  if (gguf.ssm_inner_size > 0 && !KvInHostMemory(config)) {
    // A hybrid model (recurrent state + attention) whose cache lives on a device keeps a cache
    // per sequence, the pool's cells split between them: its answers are promised the same
    // whatever else runs (prefill cuts, ShapeStableCalls), and flash attention computes a
    // sequence's rows the same only in a stream of its own. In one shared cache (kv_unified)
    // a micro-batch's rows are one matrix, and the kernel changes with the others' rows and
    // with where the sequence's cells lie. In host memory the pool is a stream per sequence
    // instead (PoolAsStreams). Measured: batch_invariance_test.
    out.context_tokens = static_cast<int32_t>(std::max<int64_t>(
        std::min(kMinAutoContext, trained), cells / std::max<int32_t>(1, config.sequences) / 256 * 256));
    out.pool_tokens = 0;
    return out;
  }
  out.context_tokens = static_cast<int32_t>(cells);
  out.pool_tokens = static_cast<int32_t>(cells);
  return out;
}

}  // namespace llmd::engine
