// Qwen3.5 (llama.cpp arch "qwen35") geometries and tensor layout for synthetic models: Gated
// DeltaNet (GDN) layers with every full_attention_interval-th layer full attention, plus an
// optional MTP block after the trunk.
#ifndef LLMD_TOOLS_MKMODEL_QWEN35_LAYOUT_H_
#define LLMD_TOOLS_MKMODEL_QWEN35_LAYOUT_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "tensor_spec.h"

struct gguf_context;

namespace llmd::mkmodel {

struct Qwen35Shape {
  std::string_view name;      // "tiny", "0.8b", "4b"
  std::string_view label;     // general.size_label
  int64_t layers;             // trunk layers; the MTP block, when asked for, comes on top
  int64_t embedding;          // n_embd
  int64_t feed_forward;       // n_ff
  // Full-attention layers (gated attention: attn_q carries the output gate too).
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  int64_t rope_dims;          // n_rot: a quarter of head_dim (partial_rotary_factor 0.25)
  int32_t rope_sections[4];   // M-RoPE sections; they sum to rope_dims / 2
  // GDN layers. llama.cpp takes the key and the value head dim to be the same (ssm.state_size).
  int64_t gdn_k_heads;        // ssm.group_count
  int64_t gdn_v_heads;        // ssm.time_step_rank
  int64_t gdn_head_dim;       // ssm.state_size
  int64_t conv_kernel;        // ssm.conv_kernel
  int64_t full_attention_interval;
  int64_t context_train;
  float rope_freq_base;

  constexpr int64_t GdnKeyDim() const { return gdn_head_dim * gdn_k_heads; }
  constexpr int64_t GdnValueDim() const { return gdn_head_dim * gdn_v_heads; }  // ssm.inner_size
  constexpr int64_t ConvChannels() const { return 2 * GdnKeyDim() + GdnValueDim(); }
  constexpr bool IsFullAttention(int64_t layer) const {
    return (layer + 1) % full_attention_interval == 0;
  }
};

// 0.8b and 4b: the text models of Qwen/Qwen3.5-0.8B and Qwen/Qwen3.5-4B as published
// (config.json text_config): layers, n_embd, FFN, heads, head dims, linear-attention heads,
// conv kernel 4, rope theta 1e7, partial rotary 0.25, mrope_section [11, 11, 10], 262144
// context. Where they differ from the real models:
// - the vocabulary is that of llama.cpp's models/ggml-vocab-qwen35.gguf, 151936 tokens; the
//   published models pad theirs to 248320, so token_embd here is smaller (0.8b: 99M fewer
//   parameters);
// - the output head is tied to token_embd: published for 0.8B, assumed (not checked) for 4B.
// tiny is not a published model: the same architecture with small layers, for fast tests.
inline constexpr Qwen35Shape kQwen35Shapes[] = {
    {.name = "tiny", .label = "tiny", .layers = 8, .embedding = 512, .feed_forward = 1536,
     .heads = 8, .kv_heads = 2, .head_dim = 64, .rope_dims = 16, .rope_sections = {3, 3, 2, 0},
     .gdn_k_heads = 2, .gdn_v_heads = 4, .gdn_head_dim = 64, .conv_kernel = 4,
     .full_attention_interval = 4, .context_train = 262144, .rope_freq_base = 1e7f},
    {.name = "0.8b", .label = "0.8B", .layers = 24, .embedding = 1024, .feed_forward = 3584,
     .heads = 8, .kv_heads = 2, .head_dim = 256, .rope_dims = 64, .rope_sections = {11, 11, 10, 0},
     .gdn_k_heads = 16, .gdn_v_heads = 16, .gdn_head_dim = 128, .conv_kernel = 4,
     .full_attention_interval = 4, .context_train = 262144, .rope_freq_base = 1e7f},
    {.name = "4b", .label = "4B", .layers = 32, .embedding = 2560, .feed_forward = 9216,
     .heads = 16, .kv_heads = 4, .head_dim = 256, .rope_dims = 64, .rope_sections = {11, 11, 10, 0},
     .gdn_k_heads = 16, .gdn_v_heads = 32, .gdn_head_dim = 128, .conv_kernel = 4,
     .full_attention_interval = 4, .context_train = 262144, .rope_freq_base = 1e7f},
};

// What llama.cpp's qwen35 graph and the CUDA kernels accept (checked at compile time below):
// GDN head dim in {16, 32, 64, 128} (gated_delta_net.cu), conv kernel in {3, 4, 5, 9, 15} and
// conv channels a multiple of 128 (ssm-conv.cu), V heads a multiple of K heads, and M-RoPE
// sections that cover half the rotated dims.
constexpr bool FitsKernels(const Qwen35Shape& s) {
  const int64_t hd = s.gdn_head_dim, k = s.conv_kernel;
  const int64_t sections = s.rope_sections[0] + s.rope_sections[1] + s.rope_sections[2] +
                           s.rope_sections[3];
  return (hd == 16 || hd == 32 || hd == 64 || hd == 128) &&
         (k == 3 || k == 4 || k == 5 || k == 9 || k == 15) && s.ConvChannels() % 128 == 0 &&
         s.gdn_v_heads % s.gdn_k_heads == 0 && s.heads % s.kv_heads == 0 &&
         s.rope_dims <= s.head_dim && 2 * sections == s.rope_dims && s.rope_sections[0] > 0 &&
         s.rope_sections[1] > 0 && s.full_attention_interval > 0;
}
static_assert(FitsKernels(kQwen35Shapes[0]) && FitsKernels(kQwen35Shapes[1]) &&
              FitsKernels(kQwen35Shapes[2]));

const Qwen35Shape* FindQwen35Shape(std::string_view name);

// Every tensor llama.cpp's qwen35 loader reads, in file order. `mtp`: one MTP block as layer
// shape.layers (full attention, FFN and the nextn projection and norms).
std::vector<TensorSpec> Qwen35Tensors(const Qwen35Shape& shape, int64_t vocab, bool mtp);

// The qwen35.* hyperparameter keys, with the exact scalar types llama.cpp's loader requires.
void SetQwen35Keys(gguf_context* out, const Qwen35Shape& shape, bool mtp);

}  // namespace llmd::mkmodel

#endif  // LLMD_TOOLS_MKMODEL_QWEN35_LAYOUT_H_
