// How much context a model gets, when the config does not say.
//
// By default the KV cache is one pool that every sequence draws on (llama.cpp's unified KV
// cache), sized as llama.cpp's parameter fitting sizes an unset context: the model's trained
// context, made smaller only where the memory budget cannot hold its KV cache (never below
// kMinAutoContext). One request may use the whole pool; many short ones share it. KV pages are
// committed only as tokens are written, so a large pool costs nothing until it is used.
//
// An explicit max_context_len keeps its old meaning: that many tokens per sequence, each
// sequence with a KV stream of its own.
#ifndef LLMD_ENGINE_CONTEXT_SIZE_H_
#define LLMD_ENGINE_CONTEXT_SIZE_H_

#include <cstdint>

#include "engine/types.h"
#include "format/gguf_precheck.h"

namespace llmd::engine {

inline constexpr int32_t kMinAutoContext = 4096;   // llama.cpp's fit_params_min_ctx
inline constexpr int32_t kFallbackContext = 4096;  // a file that names no trained context
inline constexpr int32_t kAutoEmbeddingContext = 8192;

// Whether the KV cache stays in host memory, whose pages are committed only as they are
// written: no layers offloaded to a GPU or RPC device. A pool there is a KV stream per
// sequence, each as large as the pool, its total held by the engine
// (engine/llama/llama_context_setup.h, PoolAsStreams); on a device one shared cache.
bool KvInHostMemory(const EngineConfig& config);

// The KV cache's bytes per token over every attention layer of the trunk.
uint64_t KvBytesPerToken(const format::GgufSummary& gguf, double kv_bytes_per_value);

// What a sequences' cache of `bytes` for `cells` cells (every stream's) reserves and holds:
// its attention part, `attention_per_cell` bytes a cell, counted for `pool` cells (0: all of
// them; a pool of streams reserves address space for every sequence, the pool is what it
// holds) and as `written` cells are used; the rest (a hybrid's recurrent states, one per
// sequence) whole, and whole once anything is written. KV pages are committed only as
// tokens are written (llama.cpp patch 0001).
struct KvBytes {
  uint64_t reserved = 0;
  uint64_t resident = 0;
};
KvBytes SequenceKvBytes(uint64_t bytes, uint64_t attention_per_cell, uint64_t cells, uint64_t pool,
                        uint64_t written);

// `config` with its context resolved: context_tokens (what one request may hold) and
// pool_tokens (the shared pool's cells; 0: a stream per sequence). A config that already
// names context_tokens comes back as it is. Embedding models get a stream per sequence of
// at most kAutoEmbeddingContext (each input is one decode call; there is nothing to share).
// A hybrid model whose cache lives on a device gets the pool's cells split into a cache per
// sequence instead (one shared cache would change its answers with its neighbours).
EngineConfig ResolveContext(const EngineConfig& config, const format::GgufSummary& gguf,
                            double kv_bytes_per_value);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_CONTEXT_SIZE_H_
