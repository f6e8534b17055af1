// What the llama.cpp contexts of one engine share: the cache and attention types named in the
// config, the compute threads, and a context sized for the engine's sequences. LlamaEngine's
// own context and the draft model's (LlamaDrafter) are both made from SequenceContextParams,
// so the draft model holds as many tokens per sequence as the target.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_CONTEXT_SETUP_H_
#define LLMD_ENGINE_LLAMA_LLAMA_CONTEXT_SETUP_H_

#include <string>

#include "engine/types.h"
#include "llama.h"
#include "llmd/result.h"

namespace llmd::engine {

// kv_cache_type ("f16", "q8_0", ...) and flash_attention ("auto", "on", "off");
// InvalidArgument naming the value otherwise.
Result<ggml_type> KvCacheType(const std::string& name);
Result<llama_flash_attn_type> FlashAttnType(const std::string& name);

// config.threads, or one per online CPU when 0.
int ComputeThreads(const EngineConfig& config);

// Whether a pool (pool_tokens) is a KV stream per sequence, each as large as the pool, with
// the pool's total enforced by the engine: where the cache stays in host memory, whose pages
// are committed only as they are written. On a device the cache is one shared pool
// (llama.cpp's kv_unified), whose arithmetic depends on where a sequence's cells lie.
bool PoolAsStreams(const EngineConfig& config);

// A context of context_tokens per sequence (separate KV streams), or a pool (as above),
// batch_tokens per decode, the compute threads, one output per sequence a step; the caller
// adds what is its own.
llama_context_params SequenceContextParams(const EngineConfig& config);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_CONTEXT_SETUP_H_
