// GGUF pre-check: validates a GGUF file's structure before llama.cpp ever opens it.
//
// llama.cpp's own reader has had a long series of memory-safety bugs on crafted files
// (CVE-2024-21802/21825/21836/23496/23605, CVE-2025-53630, ...). This walks the whole header,
// KV section and tensor table with every count, length, dimension, type, offset and size
// checked against the file before anything is allocated or mapped, so a crafted or truncated
// file gets a clear Corruption error and never reaches the loader.
//
// Thread-safety: stateless; `file` is only read.
#ifndef LLMD_FORMAT_GGUF_PRECHECK_H_
#define LLMD_FORMAT_GGUF_PRECHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "format/random_access_file.h"
#include "llmd/result.h"

namespace llmd::format {

struct GgufMetadata;  // format/gguf_metadata.h

// Limits beyond what the file size already bounds.
inline constexpr uint64_t kMaxKeyBytes = 64 * 1024;       // a KV key
inline constexpr uint64_t kMaxTokenBytes = 4096;          // one vocabulary entry
inline constexpr uint64_t kMaxInspectedStringBytes = 16 << 20;  // values we read into memory
inline constexpr uint32_t kMaxTensorDims = 4;             // GGML_MAX_DIMS
inline constexpr uint64_t kMaxAlignment = 1 << 20;

// What the pre-check learned; enough to plan memory before loading.
struct GgufSummary {
  uint32_t version = 0;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  std::string architecture;  // general.architecture
  std::string name;          // general.name, may be empty
  uint64_t alignment = 32;
  uint64_t data_offset = 0;   // where tensor data starts
  uint64_t tensor_bytes = 0;  // sum of all tensor sizes
  uint64_t parameter_count = 0;  // sum of all tensors' elements (saturating)
  uint64_t vocab_size = 0;    // entries in tokenizer.ggml.tokens, 0 if absent

  // The model's shape, for placement planning: 0 where the file does not say (or says it
  // per layer, as an array).
  uint32_t block_count = 0;       // <arch>.block_count
  uint32_t context_length = 0;    // <arch>.context_length: the context the model was trained for
  uint32_t embedding_length = 0;  // <arch>.embedding_length
  uint32_t head_count = 0;        // <arch>.attention.head_count
  uint32_t head_count_kv = 0;     // <arch>.attention.head_count_kv (else head_count)
  uint32_t key_length = 0;        // <arch>.attention.key_length (else embedding / heads)
  uint32_t value_length = 0;      // <arch>.attention.value_length (else embedding / heads)
  // Hybrid models (Qwen3.5: Gated DeltaNet + attention): layer i holds attention KV only when
  // (i + 1) % full_attention_interval == 0; the others hold a recurrent state per sequence of
  // (ssm_conv_kernel - 1) * (ssm_inner_size + 2 * ssm_group_count * ssm_state_size) conv
  // values plus ssm_state_size * ssm_inner_size state values, F32. 0: not hybrid.
  uint32_t full_attention_interval = 0;  // <arch>.full_attention_interval
  uint32_t ssm_conv_kernel = 0, ssm_inner_size = 0, ssm_state_size = 0, ssm_group_count = 0;
  uint32_t nextn_layers = 0;             // <arch>.nextn_predict_layers (MTP blocks, not in the trunk)
  // Tensor bytes by where llama.cpp places them: the repeating blocks (blk.N.*, by N), the
  // output head (output.*, output_norm.*), and the rest (token embeddings), which stays on
  // the CPU.
  std::vector<uint64_t> layer_bytes;
  uint64_t output_bytes = 0;
  uint64_t input_bytes = 0;
  // With no output.weight the head reuses token_embd.weight; llama.cpp loads a second copy
  // of it on the device that runs the head (when that is not the CPU).
  uint64_t tied_output_bytes = 0;
};

// Checks `file` (which must start with the GGUF magic) and returns its summary, or a
// Corruption error whose message names the section and the offending value, e.g.
// "GGUF tensor 'blk.0.attn_q.weight': data at 4096..1052672 runs past the end of the file".
// With `metadata`, also records the chat template, the file type and every key's value there
// as they are checked (what ReadGgufMetadata returns); the checks and errors are the same.
Result<GgufSummary> PrecheckGguf(const RandomAccessFile& file, GgufMetadata* metadata = nullptr);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_GGUF_PRECHECK_H_
