#include "engine/llama/llama_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

#include "chat/text_safety.h"
#include "chat/think_stripper.h"
#include "common/utf8.h"
#include "engine/llama/llama_chat_template.h"
#include "engine/llama/llama_placement.h"
#include "format/model_file.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-rpc.h"
#include "llama-cpp.h"
#include "llama.h"

namespace llmd::engine {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

bool g_verbose = false;

void LogToStderr(ggml_log_level level, const char* text, void*) {
  if (g_verbose || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
    std::fputs(text, stderr);
  }
}

void InitBackendOnce(bool verbose) {
  static std::once_flag once;
  if (verbose) g_verbose = true;
  std::call_once(once, [] {
    llama_log_set(LogToStderr, nullptr);
    llama_backend_init();
  });
}

// What the KV cache takes when full: K and V for every layer and cell, at the cache type's
// size. The head size comes from the model (Qwen3's is not n_embd / n_head).
uint64_t KvCacheBytes(const llama_model* model, const std::string& arch, ggml_type type, uint64_t cells) {
  int64_t head = llama_model_n_embd(model) / std::max(1, llama_model_n_head(model));
  char buf[32];
  if (llama_model_meta_val_str(model, (arch + ".attention.key_length").c_str(), buf, sizeof buf) > 0) {
    head = std::atoll(buf);
  }
  const uint64_t values = 2ull * llama_model_n_layer(model) * llama_model_n_head_kv(model) * head;
  return values * ggml_type_size(type) / ggml_blck_size(type) * cells;
}

Result<ggml_type> KvCacheType(const std::string& name) {
  static const std::pair<const char*, ggml_type> kTypes[] = {
      {"f32", GGML_TYPE_F32},   {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16},
      {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1},
      {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}, {"iq4_nl", GGML_TYPE_IQ4_NL}};
  for (const auto& [n, t] : kTypes) {
    if (name == n) return t;
  }
  return InvalidArgumentError("kv_cache_type '" + name +
                              "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, "
                              "iq4_nl");
}

Result<llama_flash_attn_type> FlashAttnType(const std::string& name) {
  if (name == "auto") return LLAMA_FLASH_ATTN_TYPE_AUTO;
  if (name == "on") return LLAMA_FLASH_ATTN_TYPE_ENABLED;
  if (name == "off") return LLAMA_FLASH_ATTN_TYPE_DISABLED;
  return InvalidArgumentError("flash_attention '" + name + "' is not one of auto, on, off");
}

class LlamaEngine;

class LlamaSampler final : public Sampler {
 public:
  LlamaSampler(llama_sampler_ptr chain, llama_context* ctx) : chain_(std::move(chain)), ctx_(ctx) {}
  TokenId Sample(int32_t output_index) override {
    return llama_sampler_sample(chain_.get(), ctx_, output_index);
  }

 private:
  llama_sampler_ptr chain_;
  llama_context* ctx_;
};

class LlamaChatSession final : public ChatSession {
 public:
  LlamaChatSession(LlamaEngine& engine, std::string system)
      : engine_(engine), system_(std::move(system)) {}

  Result<Completion> Send(std::string_view user, const GenerateOptions& options,
                          const TextSink& on_text) override;
  const std::vector<TokenId>& tokens() const override { return history_; }
  int32_t turns() const override { return turns_; }

 private:
  LlamaEngine& engine_;
  std::string system_;
  std::vector<TokenId> history_;
  int32_t turns_ = 0;
};

class LlamaEngine final : public Engine {
 public:
  explicit LlamaEngine(bool verbose) { InitBackendOnce(verbose); }
  ~LlamaEngine() override { Release(); }

  Status Load(const EngineConfig& config) override;
  bool loaded() const override { return ctx_ != nullptr; }
  const ModelInfo& model_info() const override { return info_; }

  Result<Completion> Generate(std::string_view system, std::string_view user,
                              const GenerateOptions& options, const TextSink& on_text) override {
    auto start = Clock::now();
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    LLMD_ASSIGN_OR_RETURN(std::string clean, chat::SanitizeUserInput(user));
    LLMD_RETURN_IF_ERROR(CheckSystem(system));
    LLMD_ASSIGN_OR_RETURN(auto prompt, TokenizePieces(chat_template_->FirstTurn(system, clean),
                                                      /*first=*/true));
    return Run(std::move(prompt), options, on_text, start);
  }

  Result<Completion> Complete(std::string_view prompt, const GenerateOptions& options,
                              const TextSink& on_text) override {
    auto start = Clock::now();
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    if (size_t bad = FindInvalidUtf8(prompt); bad != std::string_view::npos) {
      return InvalidArgumentError("prompt is not valid UTF-8 (first bad byte at offset " +
                                  std::to_string(bad) + ")");
    }
    LLMD_ASSIGN_OR_RETURN(auto tokens, Tokenize(prompt, llama_vocab_get_add_bos(vocab_), false));
    return Run(std::move(tokens), options, on_text, start);
  }

  Result<std::unique_ptr<ChatSession>> StartChat(std::string_view system) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    LLMD_RETURN_IF_ERROR(CheckSystem(system));
    return std::unique_ptr<ChatSession>(
        std::make_unique<LlamaChatSession>(*this, std::string(system)));
  }

  Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_bos,
                                        bool parse_special) const override;

  Result<std::vector<TokenId>> ChatPrompt(std::string_view system, std::string_view user,
                                          bool sanitize) const override {
    return TurnPrompt(system, user, sanitize, /*first=*/true);
  }

  Result<std::vector<TokenId>> NextTurnPrompt(std::string_view system, std::string_view user,
                                              bool sanitize) const override {
    return TurnPrompt(system, user, sanitize, /*first=*/false);
  }

  Result<std::vector<TokenId>> ConversationPrompt(const std::vector<chat::Message>& messages,
                                                  bool enable_thinking, bool sanitize) const override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    std::vector<chat::Message> clean = messages;
    for (size_t i = 0; i < clean.size(); ++i) {
      chat::Message& m = clean[i];
      if (m.role != "system" && m.role != "user" && m.role != "assistant") {
        return InvalidArgumentError("messages[" + std::to_string(i) + "].role must be system, user or assistant");
      }
      if (m.role == "user" && sanitize) {
        LLMD_ASSIGN_OR_RETURN(m.content, chat::SanitizeUserInput(m.content));
      } else if (!IsValidUtf8(m.content)) {
        return InvalidArgumentError("messages[" + std::to_string(i) + "].content is not valid UTF-8");
      }
    }
    return TokenizePieces(chat_template_->Conversation(clean, enable_thinking), /*first=*/true);
  }

  Result<std::vector<TokenId>> CompletionPrompt(std::string_view prompt) const override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    if (size_t bad = FindInvalidUtf8(prompt); bad != std::string_view::npos) {
      return InvalidArgumentError("prompt is not valid UTF-8 (first bad byte at offset " +
                                  std::to_string(bad) + ")");
    }
    return Tokenize(prompt, llama_vocab_get_add_bos(vocab_), false);
  }

  Result<std::vector<TokenId>> TurnPrompt(std::string_view system, std::string_view user, bool sanitize,
                                          bool first) const {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    std::string clean;
    if (sanitize) {
      LLMD_ASSIGN_OR_RETURN(clean, chat::SanitizeUserInput(user));
    } else if (!IsValidUtf8(user)) {
      return InvalidArgumentError("prompt is not valid UTF-8");
    } else {
      clean = std::string(user);
    }
    LLMD_RETURN_IF_ERROR(CheckSystem(system));
    return TokenizePieces(first ? chat_template_->FirstTurn(system, clean)
                                : chat_template_->NextTurn(system, clean),
                          first);
  }

  Status DecodeBatch(const std::vector<DecodeItem>& items) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    PinCallingThread();
    if (items.empty()) return Status::Ok();
    llama_batch batch = llama_batch_init(static_cast<int32_t>(items.size()), 0, 1);
    for (size_t i = 0; i < items.size(); ++i) {
      batch.token[i] = items[i].token;
      batch.pos[i] = items[i].position;
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = items[i].sequence;
      batch.logits[i] = items[i].logits;
    }
    batch.n_tokens = static_cast<int32_t>(items.size());
    int32_t rc = llama_decode(ctx_.get(), batch);
    llama_batch_free(batch);
    if (rc != 0) return InternalError("llama_decode failed with code " + std::to_string(rc));
    return Status::Ok();
  }

  void TruncateSequence(int32_t sequence, int32_t position) override {
    if (ctx_) llama_memory_seq_rm(llama_get_memory(ctx_.get()), sequence, position, -1);
    if (sequence == 0 && static_cast<size_t>(position) < resident_.size()) resident_.resize(position);
  }

  Result<std::unique_ptr<Sampler>> NewSampler(const SamplingParams& params) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    LLMD_RETURN_IF_ERROR(params.Validate());
    llama_sampler_ptr chain = NewSamplerChain(params);
    if (!chain) return InvalidArgumentError("the grammar does not parse (GBNF, rule \"root\")");
    return std::unique_ptr<Sampler>(std::make_unique<LlamaSampler>(std::move(chain), ctx_.get()));
  }

  bool IsEndOfGeneration(TokenId token) const override { return llama_vocab_is_eog(vocab_, token); }
  std::string TokenText(TokenId token) const override { return Piece(token); }

  Result<std::string> Detokenize(const std::vector<TokenId>& tokens,
                                 bool render_special) const override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    std::string text;
    for (TokenId t : tokens) {
      if (t < 0 || t >= info_.vocab_size) {
        return InvalidArgumentError("token id " + std::to_string(t) + " is outside the vocabulary");
      }
      text += Piece(t, render_special);
    }
    return text;
  }

  GenerationStats last_stats() const override { return last_stats_; }


  void Reset() override {
    if (ctx_) llama_memory_clear(llama_get_memory(ctx_.get()), true);
    resident_.clear();
  }

  void Release() override {
    chat_template_.reset();
    ctx_.reset();
    threadpool_.reset();  // after the context that uses it
    model_.reset();
    vocab_ = nullptr;
    resident_.clear();
    info_ = {};
  }

  // Tokenizes prompt pieces: template text may spell control tokens, user text may not.
  Result<std::vector<TokenId>> TokenizePieces(const chat::PromptPieces& pieces, bool first) const {
    std::vector<TokenId> out;
    bool bos = first && llama_vocab_get_add_bos(vocab_);
    for (const auto& piece : pieces) {
      LLMD_ASSIGN_OR_RETURN(auto toks, Tokenize(piece.text, bos, /*parse_special=*/!piece.user));
      out.insert(out.end(), toks.begin(), toks.end());
      bos = false;
    }
    return out;
  }

  // Prefills what of `prompt` is not already in the KV cache, then samples up to
  // options.max_tokens tokens.
  Result<Completion> Run(std::vector<TokenId> prompt, const GenerateOptions& options,
                         const TextSink& on_text, Clock::time_point start);

  const ChatTemplate& chat_template() const { return *chat_template_; }

 private:
  Status RequireLoaded() const {
    return loaded() ? Status::Ok() : UnavailableError("no model is loaded");
  }
  // ggml pins its worker threads, and only the thread that created the pool among the others;
  // the thread that drives decoding (the scheduler's) is pinned here, once.
  void PinCallingThread() {
    if (config_.cpus.empty() || pinned_thread_ == std::this_thread::get_id()) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : config_.cpus) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    }
    (void)::sched_setaffinity(0, sizeof set, &set);  // best effort: a cgroup may forbid it
    pinned_thread_ = std::this_thread::get_id();
  }
  static Status CheckSystem(std::string_view system) {
    if (!IsValidUtf8(system)) return InvalidArgumentError("system prompt is not valid UTF-8");
    return Status::Ok();
  }
  Status Prefill(const std::vector<TokenId>& prompt, size_t from,
                 const std::atomic<bool>* cancel);
  Status DecodeOne(TokenId token);
  llama_sampler_ptr NewSamplerChain(const SamplingParams& p) const;
  std::string Piece(TokenId token, bool special = false) const;

  EngineConfig config_;
  llama_model_ptr model_;
  struct ThreadpoolDeleter {
    void operator()(ggml_threadpool* t) const { ggml_threadpool_free(t); }
  };
  std::unique_ptr<ggml_threadpool, ThreadpoolDeleter> threadpool_;
  std::thread::id pinned_thread_;  // the decoding thread already pinned to config_.cpus
  llama_context_ptr ctx_;
  const llama_vocab* vocab_ = nullptr;
  std::unique_ptr<ChatTemplate> chat_template_;
  std::vector<TokenId> resident_;  // tokens in the KV cache, positions 0..n-1
  ModelInfo info_;
  double load_ms_ = 0;
  GenerationStats last_stats_;
};

Status LlamaEngine::Load(const EngineConfig& config) {
  auto start = Clock::now();
  Release();
  if (config.context_tokens <= 0) return InvalidArgumentError("context must be > 0");
  if (config.batch_tokens <= 0) return InvalidArgumentError("batch_tokens must be > 0");
  if (config.threads < 0) return InvalidArgumentError("threads must be >= 0");
  if (config.sequences < 1 || config.sequences > 64) return InvalidArgumentError("sequences must be 1..64");
  LLMD_ASSIGN_OR_RETURN(ggml_type kv_type, KvCacheType(config.kv_cache_type));
  LLMD_ASSIGN_OR_RETURN(llama_flash_attn_type fa, FlashAttnType(config.flash_attention));
  LLMD_ASSIGN_OR_RETURN(auto file, format::InspectModelFile(config.model_path));
  LLMD_RETURN_IF_ERROR(AddRpcServers(config.rpc_servers));
  // Planned before anything is loaded: a model that cannot fit is refused here, with numbers.
  LLMD_ASSIGN_OR_RETURN(LlamaPlacement placement, PlanLlamaPlacement(config, file.gguf, kv_type));

  llama_model_params mp = llama_model_default_params();
  mp.load_mode = config.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  placement.Apply(&mp);
  try {
    model_.reset(llama_model_load_from_file(config.model_path.c_str(), mp));
  } catch (const std::exception& e) {
    return CorruptionError(config.model_path + ": llama.cpp could not load it: " + e.what());
  }
  if (!model_) {
    return CorruptionError(config.model_path +
                           ": llama.cpp could not load it (see the log lines above)");
  }
  vocab_ = llama_model_get_vocab(model_.get());

  int threads = config.threads > 0 ? config.threads
                                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  llama_context_params cp = llama_context_default_params();
  // Each sequence gets its own context_tokens of KV cache.
  cp.n_ctx = static_cast<uint32_t>(config.context_tokens) * static_cast<uint32_t>(config.sequences);
  cp.kv_unified = false;
  cp.n_batch = static_cast<uint32_t>(config.batch_tokens);
  cp.n_ubatch = std::min<uint32_t>(cp.n_batch, 512);
  cp.n_seq_max = static_cast<uint32_t>(config.sequences);
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.flash_attn_type = fa;
  cp.type_k = kv_type;
  cp.type_v = kv_type;
  cp.no_perf = true;
  try {
    ctx_.reset(llama_init_from_model(model_.get(), cp));
  } catch (const std::exception& e) {
    Release();
    return ResourceExhaustedError(std::string("could not create the context: ") + e.what());
  }
  if (!ctx_) {
    Release();
    return ResourceExhaustedError("could not create a context of " +
                                  std::to_string(config.context_tokens) +
                                  " tokens (out of memory, or see the log lines above)");
  }
  // One persistent pool for prompt and generation; without it ggml would start threads for
  // every graph.
  ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
  tpp.prio = static_cast<ggml_sched_priority>(config.thread_priority);
  for (int cpu : config.cpus) {
    if (cpu >= 0 && cpu < GGML_MAX_N_THREADS) tpp.cpumask[cpu] = true;  // every thread may use every listed CPU
  }
  threadpool_.reset(ggml_threadpool_new(&tpp));
  if (!threadpool_) {
    Release();
    return ResourceExhaustedError("could not start " + std::to_string(threads) + " compute threads");
  }
  llama_attach_threadpool(ctx_.get(), threadpool_.get(), threadpool_.get());
  chat_template_ = std::make_unique<ChatTemplate>(model_.get());
  config_ = config;

  char desc[256];
  llama_model_desc(model_.get(), desc, sizeof desc);
  info_.architecture = file.gguf.architecture;
  info_.description = desc;
  info_.file_bytes = file.file_bytes;
  info_.parameters = llama_model_n_params(model_.get());
  info_.context_tokens = static_cast<int32_t>(llama_n_ctx_seq(ctx_.get()));
  info_.sequences = config.sequences;
  {
    // FNV-1a over what identifies the model's weights and vocabulary.
    std::string id = info_.architecture + "|" + info_.description + "|" + std::to_string(info_.file_bytes) + "|" +
                     std::to_string(info_.parameters) + "|" + std::to_string(info_.vocab_size) + "|" +
                     file.gguf.name + "|" + std::to_string(file.gguf.tensor_bytes);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
    info_.fingerprint = h;
  }
  info_.kv_cache_bytes = KvCacheBytes(model_.get(), file.gguf.architecture, kv_type, llama_n_ctx(ctx_.get()));
  info_.vocab_size = llama_vocab_n_tokens(vocab_);
  info_.has_chat_template = chat_template_->from_model();
  info_.placement = MeasurePlacement(ctx_.get(), placement.plan);
  info_.placement_plan = placement.plan.Describe();
  info_.placement_why = placement.plan.why;
  // The main device: the first that holds layers, else the CPU.
  std::string main = "CPU";
  for (size_t i = 1; i < placement.plan.parts.size() && main == "CPU"; ++i) {
    if (placement.plan.parts[i].layers > 0 || placement.plan.parts[i].output) main = placement.plan.parts[i].device;
  }
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    if (main == ggml_backend_dev_name(ggml_backend_dev_get(i))) {
      info_.device_index = static_cast<uint8_t>(std::min<size_t>(i, 255));
    }
  }
  load_ms_ = MsSince(start);
  last_stats_ = GenerationStats{};
  last_stats_.load_ms = load_ms_;
  return Status::Ok();
}

Result<std::vector<TokenId>> LlamaEngine::Tokenize(std::string_view text, bool add_bos,
                                                   bool parse_special) const {
  if (!loaded()) return UnavailableError("no model is loaded");
  if (text.size() > static_cast<size_t>(INT32_MAX / 2)) return InvalidArgumentError("text too long");
  // A token is at least one byte, plus BOS: text.size() + 1 always suffices.
  std::vector<TokenId> tokens(text.size() + 2);
  int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                             static_cast<int32_t>(tokens.size()), add_bos, parse_special);
  if (n < 0) return InternalError("tokenizer needed " + std::to_string(-n) + " tokens");
  tokens.resize(static_cast<size_t>(n));
  return tokens;
}

std::string LlamaEngine::Piece(TokenId token, bool special) const {
  char buf[256];
  int32_t n = llama_token_to_piece(vocab_, token, buf, sizeof buf, 0, special);
  if (n >= 0) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(-n), '\0');
  n = llama_token_to_piece(vocab_, token, big.data(), static_cast<int32_t>(big.size()), 0, special);
  big.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return big;
}

llama_sampler_ptr LlamaEngine::NewSamplerChain(const SamplingParams& p) const {
  auto params = llama_sampler_chain_default_params();
  params.no_perf = true;
  llama_sampler_ptr chain(llama_sampler_chain_init(params));
  if (!p.grammar.empty()) {
    llama_sampler* grammar = nullptr;
    try {
      grammar = llama_sampler_init_grammar(vocab_, p.grammar.c_str(), "root");
    } catch (const std::exception&) {
    }
    if (grammar == nullptr) return nullptr;
    llama_sampler_chain_add(chain.get(), grammar);
  }
  if (p.temperature <= 0.0f) {
    llama_sampler_chain_add(chain.get(), llama_sampler_init_greedy());
    return chain;
  }
  if (p.repeat_penalty > 1.0f) {
    llama_sampler_chain_add(chain.get(), llama_sampler_init_penalties(llama_vocab_n_tokens(vocab_), 64, p.repeat_penalty, 0, 0));
  }
  llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(p.top_k));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_top_p(p.top_p, 1));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_temp(p.temperature));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_dist(p.seed));
  return chain;
}

Status LlamaEngine::Prefill(const std::vector<TokenId>& prompt, size_t from,
                            const std::atomic<bool>* cancel) {
  const size_t chunk = static_cast<size_t>(config_.batch_tokens);
  llama_batch batch = llama_batch_init(static_cast<int32_t>(chunk), 0, 1);
  Status status;
  for (size_t i = from; i < prompt.size() && status.ok(); i += chunk) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      status = CancelledError("cancelled during prompt processing");
      break;
    }
    size_t n = std::min(chunk, prompt.size() - i);
    batch.n_tokens = static_cast<int32_t>(n);
    for (size_t j = 0; j < n; ++j) {
      batch.token[j] = prompt[i + j];
      batch.pos[j] = static_cast<llama_pos>(i + j);
      batch.n_seq_id[j] = 1;
      batch.seq_id[j][0] = 0;
      batch.logits[j] = (i + j + 1 == prompt.size());
    }
    int32_t rc = llama_decode(ctx_.get(), batch);
    if (rc != 0) {
      status = InternalError("llama_decode failed with code " + std::to_string(rc) +
                             " during prompt processing");
      break;
    }
    resident_.insert(resident_.end(), prompt.begin() + static_cast<ptrdiff_t>(i),
                     prompt.begin() + static_cast<ptrdiff_t>(i + n));
  }
  llama_batch_free(batch);
  return status;
}

Status LlamaEngine::DecodeOne(TokenId token) {
  llama_batch batch = llama_batch_get_one(&token, 1);
  int32_t rc = llama_decode(ctx_.get(), batch);
  if (rc != 0) return InternalError("llama_decode failed with code " + std::to_string(rc));
  resident_.push_back(token);
  return Status::Ok();
}

Result<Completion> LlamaEngine::Run(std::vector<TokenId> prompt, const GenerateOptions& options,
                                    const TextSink& on_text, Clock::time_point start) {
  LLMD_RETURN_IF_ERROR(options.sampling.Validate());
  PinCallingThread();
  if (options.max_tokens < 0) return InvalidArgumentError("max_tokens must be >= 0");
  if (prompt.empty()) return InvalidArgumentError("prompt is empty");
  const int64_t n_ctx = llama_n_ctx_seq(ctx_.get());
  if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
    return InvalidArgumentError("prompt too long (" + std::to_string(prompt.size()) +
                                " tokens >= context of " + std::to_string(n_ctx) + ")");
  }
  // Room left in the context bounds the reply, whatever max_tokens asked for.
  const int64_t budget =
      std::min<int64_t>(options.max_tokens, n_ctx - static_cast<int64_t>(prompt.size()));

  Completion out;
  GenerationStats& st = out.stats;
  st.load_ms = load_ms_;
  st.prompt_tokens = static_cast<int32_t>(prompt.size());
  if (budget == 0) {
    st.finish_reason = FinishReason::kLength;
    last_stats_ = st;
    return out;
  }

  // Reuse the longest common prefix of the KV cache; at least one token is decoded anew so
  // there are logits to sample from.
  size_t keep = std::mismatch(resident_.begin(), resident_.end(), prompt.begin(), prompt.end()).first -
                resident_.begin();
  keep = std::min(keep, prompt.size() - 1);
  llama_memory_t mem = llama_get_memory(ctx_.get());
  if (!llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(keep), -1)) {
    llama_memory_clear(mem, true);
    keep = 0;
  }
  resident_.resize(keep);
  st.cached_tokens = static_cast<int32_t>(keep);

  auto prefill_start = Clock::now();
  Status prefill = Prefill(prompt, keep, options.cancel);
  st.prefill_ms = MsSince(prefill_start);
  if (prefill.code() == StatusCode::kCancelled) {
    st.finish_reason = FinishReason::kCancelled;
    last_stats_ = st;
    return out;
  }
  LLMD_RETURN_IF_ERROR(prefill);

  llama_sampler_ptr sampler = NewSamplerChain(options.sampling);
  if (!sampler) return InvalidArgumentError("the grammar does not parse (GBNF, rule \"root\")");
  Utf8StreamAssembler utf8;
  chat::ThinkStripper think;
  std::string visible;
  auto emit = [&](std::string text) {
    if (options.strip_think) text = think.Push(text);
    visible += text;
    return !on_text || text.empty() || on_text(text);
  };

  Clock::time_point first_token;
  st.finish_reason = FinishReason::kLength;
  for (int64_t i = 0; i < budget; ++i) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      st.finish_reason = FinishReason::kCancelled;
      break;
    }
    TokenId token = llama_sampler_sample(sampler.get(), ctx_.get(), -1);
    if (i == 0) {
      first_token = Clock::now();
      st.ttft_ms = std::chrono::duration<double, std::milli>(first_token - start).count();
    }
    if (llama_vocab_is_eog(vocab_, token)) {
      st.finish_reason = FinishReason::kStop;
      break;
    }
    out.tokens.push_back(token);
    st.generated_tokens++;
    if (!emit(utf8.Push(Piece(token)))) {
      st.finish_reason = FinishReason::kCancelled;
      break;
    }
    if (i + 1 == budget) break;  // the last token needs no decode
    Status s = DecodeOne(token);
    if (!s.ok()) return s;
  }
  if (st.generated_tokens > 0) st.decode_ms = MsSince(first_token);

  std::string tail = utf8.Finish();
  if (options.strip_think) tail = think.Push(tail) + think.Finish();
  visible += tail;
  if (on_text && !tail.empty()) on_text(tail);
  out.text = std::move(visible);
  last_stats_ = st;
  return out;
}

Result<Completion> LlamaChatSession::Send(std::string_view user, const GenerateOptions& options,
                                          const TextSink& on_text) {
  auto start = Clock::now();
  LLMD_ASSIGN_OR_RETURN(std::string clean, chat::SanitizeUserInput(user));
  chat::PromptPieces pieces = turns_ == 0 ? engine_.chat_template().FirstTurn(system_, clean)
                                          : engine_.chat_template().NextTurn(system_, clean);
  LLMD_ASSIGN_OR_RETURN(auto delta, engine_.TokenizePieces(pieces, /*first=*/turns_ == 0));
  std::vector<TokenId> prompt = history_;
  prompt.insert(prompt.end(), delta.begin(), delta.end());
  LLMD_ASSIGN_OR_RETURN(Completion reply, engine_.Run(prompt, options, on_text, start));
  history_ = std::move(prompt);
  history_.insert(history_.end(), reply.tokens.begin(), reply.tokens.end());
  ++turns_;
  return reply;
}

}  // namespace

std::unique_ptr<Engine> NewLlamaEngine(bool verbose) {
  return std::make_unique<LlamaEngine>(verbose);
}

std::vector<std::string> ListLlamaDevices() {
  InitBackendOnce(false);
  std::vector<std::string> names;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    names.emplace_back(ggml_backend_dev_name(ggml_backend_dev_get(i)));
  }
  return names;
}

namespace {
// ggml aborts the process when an RPC server cannot be reached, so try a connection first.
bool RpcServerAnswers(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return false;
  bool ok = false;
  for (addrinfo* a = res; a != nullptr && !ok; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, 2000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return ok;
}
}  // namespace

Status AddRpcServers(const std::vector<std::string>& endpoints) {
  InitBackendOnce(false);
  static std::mutex mu;
  static std::set<std::string> added;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& endpoint : endpoints) {
    if (added.count(endpoint)) continue;
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) {
      return InvalidArgumentError("RPC server '" + endpoint + "' is not host:port");
    }
    std::string host = endpoint.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (!RpcServerAnswers(host, endpoint.substr(colon + 1))) {
      return UnavailableError("RPC server " + endpoint + " cannot be reached (is ggml-rpc-server running there?)");
    }
    ggml_backend_reg_t reg = ggml_backend_rpc_add_server(endpoint.c_str());
    if (reg == nullptr) {
      return UnavailableError("RPC server " + endpoint + " did not answer (is ggml-rpc-server running there?)");
    }
    ggml_backend_register(reg);
    added.insert(endpoint);
  }
  return Status::Ok();
}

std::vector<DeviceReport> DescribeLlamaDevices() {
  InitBackendOnce(false);
  std::vector<DeviceReport> out;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    DeviceReport r;
    r.name = ggml_backend_dev_name(dev);
    r.description = ggml_backend_dev_description(dev);
    switch (ggml_backend_dev_type(dev)) {
      case GGML_BACKEND_DEVICE_TYPE_CPU: r.type = "cpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_GPU: r.type = "gpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_IGPU: r.type = "igpu"; break;
      default: r.type = "accel"; break;
    }
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    r.free_bytes = free;
    r.total_bytes = total;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace llmd::engine
