// llmd-mkmodel: writes a synthetic Qwen3 or Qwen3.5 GGUF model: real geometry and the real Qwen
// vocabulary and chat template, random weights (deterministic per seed). Throughput depends
// on shapes, not on weight values, so tests and benchmarks on these models are honest without
// downloading anything.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "model_shapes.h"
#include "qwen35_layout.h"
#include "tensor_spec.h"

namespace {

using llmd::mkmodel::Fill;
using llmd::mkmodel::ModelShape;
using llmd::mkmodel::Qwen35Shape;
using llmd::mkmodel::TensorSpec;

// xoshiro256** seeded by splitmix64: fast, and the same stream on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      s = z ^ (z >> 31);
    }
  }
  // Uniform in [-1, 1).
  float Next() {
    uint64_t r = Rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return static_cast<float>(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the writer needs from one architecture and size.
struct ModelPlan {
  std::string arch;   // general.architecture
  std::string title;  // "Qwen3-0.6B", for general.name and the progress line
  std::string label;  // general.size_label
  int64_t layers, embedding;
  std::function<std::vector<TensorSpec>(int64_t vocab)> tensors;
  std::function<void(gguf_context*)> set_keys;  // the <arch>.* hyperparameters
  uint32_t pooling = 0;  // <arch>.pooling_type (llama.cpp's: 1 mean, 2 cls, 3 last); 0: not written
};

std::vector<TensorSpec> Qwen3Tensors(const ModelShape& s, int64_t vocab) {
  std::vector<TensorSpec> t;
  auto matrix = [&](std::string name, int64_t ne0, int64_t ne1) {
    t.push_back({std::move(name), ne0, ne1, Fill::kRandom, false});
  };
  auto norm = [&](std::string name, int64_t n) {
    t.push_back({std::move(name), n, 0, Fill::kOnes, true});
  };
  matrix("token_embd.weight", s.embedding, vocab);
  norm("output_norm.weight", s.embedding);
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string b = "blk." + std::to_string(i) + ".";
    norm(b + "attn_norm.weight", s.embedding);
    matrix(b + "attn_q.weight", s.embedding, q);
    matrix(b + "attn_k.weight", s.embedding, kv);
    matrix(b + "attn_v.weight", s.embedding, kv);
    matrix(b + "attn_output.weight", q, s.embedding);
    norm(b + "attn_q_norm.weight", s.head_dim);
    norm(b + "attn_k_norm.weight", s.head_dim);
    norm(b + "ffn_norm.weight", s.embedding);
    matrix(b + "ffn_gate.weight", s.embedding, s.feed_forward);
    matrix(b + "ffn_up.weight", s.embedding, s.feed_forward);
    matrix(b + "ffn_down.weight", s.feed_forward, s.embedding);
  }
  return t;
}

void SetQwen3Keys(gguf_context* out, const ModelShape& shape) {
  gguf_set_val_u32(out, "qwen3.block_count", static_cast<uint32_t>(shape.layers));
  gguf_set_val_u32(out, "qwen3.context_length", static_cast<uint32_t>(shape.context_train));
  gguf_set_val_u32(out, "qwen3.embedding_length", static_cast<uint32_t>(shape.embedding));
  gguf_set_val_u32(out, "qwen3.feed_forward_length", static_cast<uint32_t>(shape.feed_forward));
  gguf_set_val_u32(out, "qwen3.attention.head_count", static_cast<uint32_t>(shape.heads));
  gguf_set_val_u32(out, "qwen3.attention.head_count_kv", static_cast<uint32_t>(shape.kv_heads));
  gguf_set_val_u32(out, "qwen3.attention.key_length", static_cast<uint32_t>(shape.head_dim));
  gguf_set_val_u32(out, "qwen3.attention.value_length", static_cast<uint32_t>(shape.head_dim));
  gguf_set_val_f32(out, "qwen3.rope.freq_base", 1000000.0f);
  gguf_set_val_f32(out, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
}

// The plans keep references to `s`: both shape tables are static, so they outlive the plan.
ModelPlan Qwen3Plan(const ModelShape& s) {
  return {"qwen3", "Qwen3-" + std::string(s.label), std::string(s.label), s.layers, s.embedding,
          [&s](int64_t vocab) { return Qwen3Tensors(s, vocab); },
          [&s](gguf_context* out) { SetQwen3Keys(out, s); }};
}

ModelPlan Qwen35Plan(const Qwen35Shape& s, bool mtp) {
  std::string title = "Qwen3.5-" + std::string(s.label) + (mtp ? "+MTP" : "");
  return {"qwen35", title, std::string(s.label), s.layers, s.embedding,
          [&s, mtp](int64_t vocab) { return llmd::mkmodel::Qwen35Tensors(s, vocab, mtp); },
          [&s, mtp](gguf_context* out) { llmd::mkmodel::SetQwen35Keys(out, s, mtp); }};
}

int64_t FindToken(const gguf_context* vocab, const char* text) {
  int64_t key = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  size_t n = gguf_get_arr_n(vocab, key);
  for (size_t i = 0; i < n; ++i) {
    if (std::strcmp(gguf_get_arr_str(vocab, key, i), text) == 0) return static_cast<int64_t>(i);
  }
  return -1;
}

// The GGUF header: the vocabulary file's tokenizer.* keys, general.*, the architecture's keys
// and the chat template. Sets `n_vocab`. Returns nullptr with a message on stderr on failure.
gguf_context* NewHeader(const ModelPlan& plan, uint64_t seed, const std::string& vocab_path,
                        const std::string& template_path, int64_t& n_vocab) {
  gguf_init_params vp = {/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* vocab = gguf_init_from_file(vocab_path.c_str(), vp);
  if (vocab == nullptr) {
    std::fprintf(stderr, "mkmodel: cannot read the vocabulary %s\n", vocab_path.c_str());
    return nullptr;
  }
  std::string chat_template = ReadFile(template_path);
  if (chat_template.empty()) {
    std::fprintf(stderr, "mkmodel: cannot read the chat template %s\n", template_path.c_str());
    gguf_free(vocab);
    return nullptr;
  }
  int64_t tokens_key = gguf_find_key(vocab, "tokenizer.ggml.tokens");
  n_vocab = tokens_key < 0 ? 0 : static_cast<int64_t>(gguf_get_arr_n(vocab, tokens_key));
  const int64_t im_end = n_vocab == 0 ? -1 : FindToken(vocab, "<|im_end|>");
  const int64_t endoftext = n_vocab == 0 ? -1 : FindToken(vocab, "<|endoftext|>");
  if (n_vocab == 0 || im_end < 0 || endoftext < 0) {
    std::fprintf(stderr, "mkmodel: %s is not a Qwen vocabulary\n", vocab_path.c_str());
    gguf_free(vocab);
    return nullptr;
  }

  gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, vocab);
  for (int64_t i = gguf_get_n_kv(out) - 1; i >= 0; --i) {  // the vocab file's own arch keys
    std::string key = gguf_get_key(out, i);
    if (key.starts_with("qwen2.")) gguf_remove_key(out, key.c_str());
  }
  gguf_free(vocab);
  std::string name = "llmd synthetic " + plan.title + " seed " + std::to_string(seed);
  gguf_set_val_str(out, "general.architecture", plan.arch.c_str());
  gguf_set_val_str(out, "general.name", name.c_str());
  gguf_set_val_str(out, "general.size_label", plan.label.c_str());
  gguf_set_val_u32(out, "general.file_type", 1);  // mostly F16
  plan.set_keys(out);
  if (plan.pooling != 0) gguf_set_val_u32(out, (plan.arch + ".pooling_type").c_str(), plan.pooling);
  gguf_set_val_u32(out, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(im_end));
  gguf_set_val_u32(out, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(endoftext));
  gguf_set_val_u32(out, "tokenizer.ggml.padding_token_id", static_cast<uint32_t>(endoftext));
  gguf_set_val_bool(out, "tokenizer.ggml.add_bos_token", false);
  gguf_set_val_str(out, "tokenizer.chat_template", chat_template.c_str());
  return out;
}

bool WriteZeros(FILE* f, size_t n) {
  static const char zeros[64] = {};
  while (n > 0) {
    size_t k = std::min(n, sizeof zeros);
    if (std::fwrite(zeros, 1, k, f) != k) return false;
    n -= k;
  }
  return true;
}

// Streams every tensor's data in header order, one row at a time, so memory stays at one row
// whatever the model size. The random stream is consumed in file order, which is what makes
// the file a function of the seed.
bool WriteTensorData(FILE* f, const std::vector<TensorSpec>& specs, ggml_context* meta,
                     size_t alignment, uint64_t total, uint64_t seed, float init_std) {
  Rng rng(seed);
  const float scale = init_std * 1.7320508f;  // uniform with this standard deviation
  std::vector<float> row;
  std::vector<ggml_fp16_t> half;
  uint64_t written = 0, next_report = 0;
  bool ok = true;
  for (const auto& s : specs) {
    ggml_tensor* t = ggml_get_tensor(meta, s.name.c_str());
    const int64_t rows = s.ne1 == 0 ? 1 : s.ne1;
    row.resize(static_cast<size_t>(s.ne0));
    half.resize(row.size());
    for (int64_t r = 0; r < rows && ok; ++r) {
      for (auto& v : row) {
        switch (s.fill) {
          case Fill::kRandom: v = rng.Next() * scale; break;
          case Fill::kOnes: v = 1.0f; break;
          case Fill::kNegative: v = -8.5f - 7.5f * rng.Next(); break;  // (-16, -1]
        }
      }
      if (s.f32) {
        ok = std::fwrite(row.data(), sizeof(float), row.size(), f) == row.size();
      } else {
        ggml_fp32_to_fp16_row(row.data(), half.data(), static_cast<int64_t>(row.size()));
        ok = std::fwrite(half.data(), sizeof(ggml_fp16_t), half.size(), f) == half.size();
      }
    }
    ok = ok && WriteZeros(f, GGML_PAD(ggml_nbytes(t), alignment) - ggml_nbytes(t));
    written += ggml_nbytes(t);
    if (total > (64u << 20) && written >= next_report) {
      std::fprintf(stderr, "\rmkmodel: weights %3d%%", static_cast<int>(100 * written / total));
      next_report = written + total / 50;
    }
  }
  if (total > (64u << 20)) std::fprintf(stderr, "\rmkmodel: weights 100%%\n");
  return ok;
}

// Writes the F16 model to `path`. Returns false with a message on stderr on failure.
bool WriteF16(const ModelPlan& plan, uint64_t seed, float init_std, const std::string& vocab_path,
              const std::string& template_path, const std::string& path) {
  int64_t n_vocab = 0;
  gguf_context* out = NewHeader(plan, seed, vocab_path, template_path, n_vocab);
  if (out == nullptr) return false;

  // Tensor metadata only (no_alloc): the data is generated and streamed one tensor at a time.
  std::vector<TensorSpec> specs = plan.tensors(n_vocab);
  ggml_init_params gp = {ggml_tensor_overhead() * (specs.size() + 1), nullptr, /*no_alloc=*/true};
  ggml_context* meta = ggml_init(gp);
  uint64_t total = 0;
  for (const auto& s : specs) {
    const ggml_type type = s.f32 ? GGML_TYPE_F32 : GGML_TYPE_F16;
    ggml_tensor* t = s.ne1 == 0 ? ggml_new_tensor_1d(meta, type, s.ne0)
                                : ggml_new_tensor_2d(meta, type, s.ne0, s.ne1);
    ggml_set_name(t, s.name.c_str());
    gguf_add_tensor(out, t);
    total += ggml_nbytes(t);
  }

  FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr;
  if (!ok) {
    std::fprintf(stderr, "mkmodel: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  } else {
    std::vector<char> header(gguf_get_meta_size(out));
    gguf_get_meta_data(out, header.data());
    ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
    ok = ok && WriteTensorData(f, specs, meta, gguf_get_alignment(out), total, seed, init_std);
    ok = std::fclose(f) == 0 && ok;
    if (!ok) std::fprintf(stderr, "mkmodel: writing %s failed\n", path.c_str());
  }
  ggml_free(meta);
  gguf_free(out);
  return ok;
}

void QuietLog(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

// Quantizes the F16 file `f16_path` into `out`. llama_model_quantize keeps norms, biases and
// the conv kernels as they are, and moves a tensor whose rows don't split into whole blocks to
// a type they do (F16 at worst).
bool Quantize(const std::string& f16_path, const std::string& out, const std::string& type,
              int threads) {
  const std::string tmp = out + ".tmp";
  llama_log_set(QuietLog, nullptr);
  llama_backend_init();
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = threads;
  qp.ftype = type == "q4_0" ? LLAMA_FTYPE_MOSTLY_Q4_0 : LLAMA_FTYPE_MOSTLY_Q8_0;
  std::fprintf(stderr, "mkmodel: quantizing to %s\n", type.c_str());
  uint32_t rc = llama_model_quantize(f16_path.c_str(), tmp.c_str(), &qp);
  llama_backend_free();
  if (rc != 0 || std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::fprintf(stderr, "mkmodel: quantization failed (%u)\n", rc);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Writes a synthetic Qwen3 or Qwen3.5 GGUF model: real geometry, the real Qwen vocabulary\n"
      "and chat template, deterministic random weights. For tests and benchmarks; it knows\n"
      "nothing."};
  std::string arch = "qwen3", size = "tiny", type = "q8_0", out, vocab, tmpl;
  uint64_t seed = 1;
  int threads = 0;
  float init_std = 0.1f;
  bool mtp = false;
  std::string pooling = "none";
  app.add_option("--arch", arch, "Architecture: qwen3, or qwen35 (Qwen3.5: Gated DeltaNet layers, "
                                 "every 4th layer full attention)")
      ->check(CLI::IsMember({"qwen3", "qwen35"}))
      ->capture_default_str();
  app.add_option("-s,--size", size,
                 "Geometry. tiny: small layers for fast tests (qwen35: 8 layers, n_embd 512), "
                 "not a published model. qwen3: 0.6b or 1.7b, as published. qwen35: 0.8b or 4b, "
                 "as published except for the vocabulary (151936 tokens, not 248320) and the "
                 "output tied to token_embd (assumed for 4b)")
      ->check(CLI::IsMember({"tiny", "0.6b", "1.7b", "0.8b", "4b"}))
      ->capture_default_str();
  app.add_flag("--mtp", mtp,
               "qwen35 only: add one MTP block (nextn_predict_layers 1) after the trunk");
  app.add_option("-t,--type", type, "Weight type: f16, q8_0 or q4_0")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "Random seed; the same seed writes the same file")
      ->capture_default_str();
  app.add_option("-o,--output", out, "Output .gguf path")->required();
  app.add_option("--vocab", vocab,
                 "Qwen vocabulary GGUF (default: llama.cpp models/ggml-vocab-qwen2.gguf for "
                 "qwen3, models/ggml-vocab-qwen35.gguf for qwen35)");
  app.add_option("--template", tmpl,
                 "Chat template (default: llama.cpp models/templates/Qwen-Qwen3-0.6B.jinja for "
                 "qwen3, Qwen3.5-4B.jinja for qwen35)");
  app.add_option("--init-std", init_std,
                 "Standard deviation of the random weights (larger: more varied output)")
      ->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  app.add_option("--pooling", pooling,
                 "Write a pooling type, as embedding models carry it (Qwen3-Embedding: last); "
                 "none writes nothing")
      ->check(CLI::IsMember({"none", "mean", "cls", "last"}))
      ->capture_default_str();
  app.add_option("--threads", threads, "Quantization threads (0: all)");
  CLI11_PARSE(app, argc, argv);

  const bool qwen35 = arch == "qwen35";
  const ModelShape* shape3 = qwen35 ? nullptr : llmd::mkmodel::FindShape(size);
  const Qwen35Shape* shape35 = qwen35 ? llmd::mkmodel::FindQwen35Shape(size) : nullptr;
  if (shape3 == nullptr && shape35 == nullptr) {
    std::fprintf(stderr, "mkmodel: %s has no size %s (see --help)\n", arch.c_str(), size.c_str());
    return 2;
  }
  if (mtp && !qwen35) {
    std::fprintf(stderr, "mkmodel: --mtp needs --arch qwen35\n");
    return 2;
  }
  if (vocab.empty()) vocab = qwen35 ? LLMD_QWEN35_VOCAB : LLMD_DEFAULT_VOCAB;
  if (tmpl.empty()) tmpl = qwen35 ? LLMD_QWEN35_TEMPLATE : LLMD_DEFAULT_TEMPLATE;
  ModelPlan plan = qwen35 ? Qwen35Plan(*shape35, mtp) : Qwen3Plan(*shape3);
  plan.pooling = pooling == "mean" ? 1 : pooling == "cls" ? 2 : pooling == "last" ? 3 : 0;

  // Written beside the target and renamed into place, so an interrupted run leaves no
  // half-written model behind.
  std::string f16_path = out + ".f16.tmp";
  std::fprintf(stderr, "mkmodel: %s (%lld layers, n_embd %lld) %s, seed %llu -> %s\n",
               plan.title.c_str(), static_cast<long long>(plan.layers),
               static_cast<long long>(plan.embedding), type.c_str(),
               static_cast<unsigned long long>(seed), out.c_str());
  if (!WriteF16(plan, seed, init_std, vocab, tmpl, f16_path)) {
    std::remove(f16_path.c_str());
    return 1;
  }
  if (type == "f16") return std::rename(f16_path.c_str(), out.c_str()) == 0 ? 0 : 1;
  const bool ok = Quantize(f16_path, out, type, threads);
  std::remove(f16_path.c_str());
  if (!ok) return 1;
  std::fprintf(stderr, "mkmodel: done\n");
  return 0;
}
