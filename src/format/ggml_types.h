// The tensor types a GGUF file may declare, with their block geometry, as in the pinned
// ggml (ggml.h enum ggml_type, ggml.c type_traits). Kept here so the pre-check can size
// tensors without including ggml (only src/engine/llama may).
#ifndef LLMD_FORMAT_GGML_TYPES_H_
#define LLMD_FORMAT_GGML_TYPES_H_

#include <cstdint>
#include <string_view>

namespace llmd::format {

struct GgmlTypeInfo {
  uint32_t id;
  std::string_view name;
  int64_t block_size;  // elements per block
  uint64_t type_size;  // bytes per block
};

// The entry for `id`, or nullptr for an unknown or removed type.
const GgmlTypeInfo* FindGgmlType(uint32_t id);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_GGML_TYPES_H_
