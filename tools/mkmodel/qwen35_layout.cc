#include "qwen35_layout.h"

#include <string>

#include "gguf.h"

namespace llmd::mkmodel {
namespace {

using Tensors = std::vector<TensorSpec>;

// A matrix [ne0 inputs, ne1 outputs] in F16, quantized later.
void Matrix(Tensors& t, const std::string& name, int64_t ne0, int64_t ne1) {
  t.push_back({name, ne0, ne1, Fill::kRandom, false});
}

void Ones(Tensors& t, const std::string& name, int64_t n) {
  t.push_back({name, n, 0, Fill::kOnes, true});
}

void AddFullAttention(Tensors& t, const std::string& b, const Qwen35Shape& s) {
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  // Per head, head_dim query values then head_dim values of the sigmoid output gate.
  Matrix(t, b + "attn_q.weight", s.embedding, 2 * q);
  Matrix(t, b + "attn_k.weight", s.embedding, kv);
  Matrix(t, b + "attn_v.weight", s.embedding, kv);
  Matrix(t, b + "attn_output.weight", q, s.embedding);
  Ones(t, b + "attn_q_norm.weight", s.head_dim);
  Ones(t, b + "attn_k_norm.weight", s.head_dim);
}

void AddGatedDeltaNet(Tensors& t, const std::string& b, const Qwen35Shape& s) {
  const int64_t value = s.GdnValueDim(), v_heads = s.gdn_v_heads;
  // The loader marks attn_qkv and attn_gate optional, but the graph multiplies by both.
  Matrix(t, b + "attn_qkv.weight", s.embedding, s.ConvChannels());
  Matrix(t, b + "attn_gate.weight", s.embedding, value);
  // The conv kernel stays F32: ggml_ssm_conv wants it so and the quantizer leaves it alone.
  t.push_back({b + "ssm_conv1d.weight", s.conv_kernel, s.ConvChannels(), Fill::kRandom, true});
  Ones(t, b + "ssm_dt.bias", v_heads);  // HF initializes dt_bias to ones
  // ssm_a holds -exp(A_log): negative, or the state would grow instead of decay.
  t.push_back({b + "ssm_a", v_heads, 0, Fill::kNegative, true});
  Matrix(t, b + "ssm_beta.weight", s.embedding, v_heads);
  Matrix(t, b + "ssm_alpha.weight", s.embedding, v_heads);
  Ones(t, b + "ssm_norm.weight", s.gdn_head_dim);
  Matrix(t, b + "ssm_out.weight", value, s.embedding);
}

void AddFeedForward(Tensors& t, const std::string& b, const Qwen35Shape& s) {
  Matrix(t, b + "ffn_gate.weight", s.embedding, s.feed_forward);
  Matrix(t, b + "ffn_up.weight", s.embedding, s.feed_forward);
  Matrix(t, b + "ffn_down.weight", s.feed_forward, s.embedding);
}

// Both kinds of layer: pre-attention norm, the mixer, the post-attention norm and a dense FFN.
void AddLayer(Tensors& t, int64_t i, const Qwen35Shape& s) {
  const std::string b = "blk." + std::to_string(i) + ".";
  Ones(t, b + "attn_norm.weight", s.embedding);
  Ones(t, b + "post_attention_norm.weight", s.embedding);
  if (s.IsFullAttention(i)) {
    AddFullAttention(t, b, s);
  } else {
    AddGatedDeltaNet(t, b, s);
  }
  AddFeedForward(t, b, s);
}

// The MTP block as Qwen3.5 ships it: a full-attention decoder block fed by eh_proj over the
// normed [token embedding, hidden state] pair, with its own head norm. It shares token_embd and
// the output head with the trunk (mtp_use_dedicated_embeddings false).
void AddMtpBlock(Tensors& t, int64_t i, const Qwen35Shape& s) {
  const std::string b = "blk." + std::to_string(i) + ".";
  Ones(t, b + "attn_norm.weight", s.embedding);
  Ones(t, b + "post_attention_norm.weight", s.embedding);
  AddFullAttention(t, b, s);
  AddFeedForward(t, b, s);
  Matrix(t, b + "nextn.eh_proj.weight", 2 * s.embedding, s.embedding);
  Ones(t, b + "nextn.enorm.weight", s.embedding);
  Ones(t, b + "nextn.hnorm.weight", s.embedding);
  Ones(t, b + "nextn.shared_head_norm.weight", s.embedding);
}

}  // namespace

const Qwen35Shape* FindQwen35Shape(std::string_view name) {
  for (const auto& s : kQwen35Shapes) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<TensorSpec> Qwen35Tensors(const Qwen35Shape& s, int64_t vocab, bool mtp) {
  Tensors t;
  // No output.weight: the output head is tied to token_embd.
  Matrix(t, "token_embd.weight", s.embedding, vocab);
  Ones(t, "output_norm.weight", s.embedding);
  for (int64_t i = 0; i < s.layers; ++i) AddLayer(t, i, s);
  if (mtp) AddMtpBlock(t, s.layers, s);
  return t;
}

void SetQwen35Keys(gguf_context* out, const Qwen35Shape& s, bool mtp) {
  auto u32 = [&](const char* key, int64_t v) {
    gguf_set_val_u32(out, (std::string("qwen35.") + key).c_str(), static_cast<uint32_t>(v));
  };
  auto f32 = [&](const char* key, float v) {
    gguf_set_val_f32(out, (std::string("qwen35.") + key).c_str(), v);
  };
  // block_count counts the MTP block too; llama.cpp subtracts nextn_predict_layers.
  u32("block_count", s.layers + (mtp ? 1 : 0));
  if (mtp) u32("nextn_predict_layers", 1);
  u32("context_length", s.context_train);
  u32("embedding_length", s.embedding);
  u32("feed_forward_length", s.feed_forward);
  u32("attention.head_count", s.heads);
  u32("attention.head_count_kv", s.kv_heads);
  u32("attention.key_length", s.head_dim);
  u32("attention.value_length", s.head_dim);
  f32("attention.layer_norm_rms_epsilon", 1e-6f);
  u32("rope.dimension_count", s.rope_dims);
  gguf_set_arr_data(out, "qwen35.rope.dimension_sections", GGUF_TYPE_INT32, s.rope_sections, 4);
  f32("rope.freq_base", s.rope_freq_base);
  u32("ssm.conv_kernel", s.conv_kernel);
  u32("ssm.state_size", s.gdn_head_dim);
  u32("ssm.group_count", s.gdn_k_heads);
  u32("ssm.time_step_rank", s.gdn_v_heads);
  u32("ssm.inner_size", s.GdnValueDim());
  u32("full_attention_interval", s.full_attention_interval);
}

}  // namespace llmd::mkmodel
