// Which flash attention kernel ggml's CPU backend computes a prompt token with in the prompt's
// cold prefill, and how much of a cached prefix was computed with the kernels a new prompt's
// cold prefill would use. By default ggml chooses by the call's rows per KV stream (row by row
// under 64 rows, 64x64 tiles from 64, a single row split between the threads) and the three
// give other bits for one row; llama.cpp computes a prompt in micro-batches of n_ubatch tokens
// from position 0, so a token's kernel depends on its prompt's length. A prompt call tells the
// kernel its tokens' cold kind (llama.cpp patch 0004), so a prompt after a cached prefix comes
// out in the cold prefill's bits, provided the prefix's own rows were computed alike.
#ifndef LLMD_ENGINE_PROMPT_KERNELS_H_
#define LLMD_ENGINE_PROMPT_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace llmd::engine {

enum class PromptKernel {
  kSingleRow,  // a one-token micro-batch: ggml's own choice for one row
  kRowByRow,   // 2 .. 63 rows
  kTiled,      // 64 rows or more
};

// ggml-cpu's GGML_FA_TILE_Q: from this many rows per stream the tiled kernel is taken.
inline constexpr int64_t kTiledKernelRows = 64;

// The kernel the cold prefill of a `prompt_tokens`-token prompt, in micro-batches of
// `ubatch` tokens, computes position `position` with.
PromptKernel ColdKernel(int64_t position, int64_t prompt_tokens, int64_t ubatch);

// Of the first `keep` positions, computed for a prompt of `computed_for` tokens, how many the
// cold prefill of a `prompt_tokens`-token prompt computes with the same kernel: `keep`, or the
// start of the first micro-batch whose kind differs (only a last, partial one can).
size_t SameKernelPrefix(size_t keep, size_t computed_for, size_t prompt_tokens, size_t ubatch);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_PROMPT_KERNELS_H_
