#include "engine/llama/llama_context_setup.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "engine/context_size.h"

namespace llmd::engine {

Result<ggml_type> KvCacheType(const std::string& name) {
  static const std::pair<const char*, ggml_type> kTypes[] = {
      {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
      {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
      {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}, {"iq4_nl", GGML_TYPE_IQ4_NL}};
  for (const auto& [n, t] : kTypes) {
    if (name == n) return t;
  }
  return InvalidArgumentError("kv_cache_type '" + name +
                              "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, "
                              "iq4_nl");
}

Result<llama_flash_attn_type> FlashAttnType(const std::string& name) {
  if (name == "auto") return LLAMA_FLASH_ATTN_TYPE_AUTO;
  if (name == "on") return LLAMA_FLASH_ATTN_TYPE_ENABLED;
  if (name == "off") return LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return InvalidArgumentError("flash_attention '" + name + "' is not one of auto, on, off");
}

int ComputeThreads(const EngineConfig& config) {
  return config.threads > 0 ? config.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool PoolAsStreams(const EngineConfig& config) { return config.pool_tokens > 0 && KvInHostMemory(config); }

llama_context_params SequenceContextParams(const EngineConfig& config) {
  llama_context_params cp = llama_context_default_params();
  if (PoolAsStreams(config)) {
    // Each sequence may use the whole pool, in a stream of its own: ggml's CPU flash attention
    // computes a sequence's rows the same only there (docs/architecture.md, "One KV pool").
    // The address space is the pool times the sequences, mapped without swap accounting
    // (llama.cpp patch 0005); the engine holds the cells in use to the pool.
    cp.n_ctx = static_cast<uint32_t>(config.pool_tokens) * static_cast<uint32_t>(config.sequences);
    cp.kv_unified = false;
  } else if (config.pool_tokens > 0) {
    // One pool of cells that every sequence draws on (ResolveContext).
    cp.n_ctx = static_cast<uint32_t>(config.pool_tokens);
    cp.kv_unified = true;
  } else {
    // Each sequence gets its own context_tokens of KV cache.
    cp.n_ctx = static_cast<uint32_t>(config.context_tokens) * static_cast<uint32_t>(config.sequences);
    cp.kv_unified = false;
  }
  cp.n_batch = static_cast<uint32_t>(config.batch_tokens);
  cp.n_ubatch = std::min<uint32_t>(cp.n_batch, 512);
  cp.n_seq_max = static_cast<uint32_t>(config.sequences);
  // The outputs reserved (logits and the output head's scratch: 512 x 152k floats, 297 MiB,
  // by llama.cpp's default) are one per sequence a step.
  cp.n_outputs_max = static_cast<uint32_t>(config.sequences);
  cp.n_threads = cp.n_threads_batch = ComputeThreads(config);
  cp.no_perf = true;
  return cp;
}

}  // namespace llmd::engine
