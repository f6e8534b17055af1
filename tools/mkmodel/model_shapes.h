// Qwen3 geometries for synthetic models. Shared by the writer and by tests that check it.
#ifndef LLMD_TOOLS_MKMODEL_MODEL_SHAPES_H_
#define LLMD_TOOLS_MKMODEL_MODEL_SHAPES_H_

#include <cstdint>
#include <string_view>

namespace llmd::mkmodel {

struct ModelShape {
  std::string_view name;      // "tiny", "0.6b", "1.7b"
  std::string_view label;     // general.size_label
  int64_t layers;
  int64_t embedding;          // n_embd
  int64_t feed_forward;       // n_ff
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int64_t context_train;
};

// Qwen3-0.6B and Qwen3-1.7B as published (config.json); tiny keeps the architecture and the
// real vocabulary with small layers, for fast tests.
inline constexpr ModelShape kShapes[] = {
    {"tiny", "tiny", 2, 128, 256, 4, 2, 32, 40960},
    {"0.6b", "0.6B", 28, 1024, 3072, 16, 8, 128, 40960},
    {"1.7b", "1.7B", 28, 2048, 6144, 16, 8, 128, 40960},
};

inline const ModelShape* FindShape(std::string_view name) {
  for (const auto& s : kShapes) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace llmd::mkmodel

#endif  // LLMD_TOOLS_MKMODEL_MODEL_SHAPES_H_
