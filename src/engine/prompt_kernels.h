// Which flash attention kernel ggml's CPU backend computes a prompt token with in the prompt's
// cold prefill, and how much of a cached prefix was computed with the kernels a new prompt's
// cold prefill would use. By default ggml chooses by the call's rows per KV stream (row by row
// under 64 rows, 64x64 tiles from 64, a single row split between the threads) and the three
// give other bits for one row; llama.cpp computes a prompt in micro-batches of n_ubatch tokens
// from position 0, so a token's kernel depends on its prompt's length. A prompt call tells the
// kernel its tokens' cold kind (llama.cpp patch 0004), so a prompt after a cached prefix comes
// out in the cold prefill's bits, provided the prefix's own rows were computed alike.
//
// llmd's cold kinds are ggml's own for a prompt shorter than a tile (one call, row by row: the
// bits of llama.cpp's programs), and from there the tiled kernel for every micro-batch of
// kTiledFromRows rows or more, where ggml would go row by row under 64: at depth a row-by-row
// row reads the whole cache, as a decode step does, and a short tiled call is up to 3x faster
// (bench/fa_kernel_probe, docs/benchmarks.md), which is what a follow-up turn's few new rows
// after a long cached prefix cost.
#ifndef LLMD_ENGINE_PROMPT_KERNELS_H_
#define LLMD_ENGINE_PROMPT_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace llmd::engine {

enum class PromptKernel {
  kSingleRow,  // a one-token micro-batch: ggml's own choice for one row
  kRowByRow,   // a prompt under 64 tokens, or a micro-batch of 2 .. kTiledFromRows - 1 rows
  kTiled,      // any other micro-batch
};

// ggml-cpu's GGML_FA_TILE_Q: from this many rows per stream ggml takes the tiled kernel.
inline constexpr int64_t kTiledKernelRows = 64;

// From this many rows a micro-batch of a prompt of 64 tokens or more takes the tiled kernel:
// bench/fa_kernel_probe (0.6B Q4_0, 2 threads) has tiled / row by row at 4 rows 1.25x (every
// depth measured: 256, 2,048, 8,192 cells), at 6 rows 0.70x at 8,192 and 0.95x at 2,048.
inline constexpr int64_t kTiledFromRows = 6;

// The kernel the cold prefill of a `prompt_tokens`-token prompt, in micro-batches of
// `ubatch` tokens, computes position `position` with.
PromptKernel ColdKernel(int64_t position, int64_t prompt_tokens, int64_t ubatch);

// Of the first `keep` positions, computed for a prompt of `computed_for` tokens, how many the
// cold prefill of a `prompt_tokens`-token prompt computes with the same kernel: `keep`, or the
// start of the first micro-batch whose kind differs (only a last, partial one can).
size_t SameKernelPrefix(size_t keep, size_t computed_for, size_t prompt_tokens, size_t ubatch);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_PROMPT_KERNELS_H_
