#include "engine/prompt_kernels.h"

#include <algorithm>

namespace llmd::engine {

PromptKernel ColdKernel(int64_t position, int64_t prompt_tokens, int64_t ubatch) {
  const int64_t start = position / ubatch * ubatch;
  const int64_t rows = std::min(ubatch, prompt_tokens - start);
  if (rows <= 1) return PromptKernel::kSingleRow;
  if (rows >= kTiledKernelRows) return PromptKernel::kTiled;
  // A prompt shorter than a tile: ggml's choice, so that its bits are llama.cpp's own (that
  // shallow, the two kernels cost about the same).
  if (prompt_tokens < kTiledKernelRows) return PromptKernel::kRowByRow;
  return rows >= kTiledFromRows ? PromptKernel::kTiled : PromptKernel::kRowByRow;
}

size_t SameKernelPrefix(size_t keep, size_t computed_for, size_t prompt_tokens, size_t ubatch) {
  if (ubatch == 0) return keep;
  for (size_t start = 0; start < keep; start += ubatch) {
    const auto at = static_cast<int64_t>(start);
    if (ColdKernel(at, static_cast<int64_t>(computed_for), static_cast<int64_t>(ubatch)) !=
        ColdKernel(at, static_cast<int64_t>(prompt_tokens), static_cast<int64_t>(ubatch))) {
      return start;
    }
  }
  return keep;
}

}  // namespace llmd::engine
