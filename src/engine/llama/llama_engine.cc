#include "engine/llama/llama_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <exception>
#include <sched.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>
#include <thread>

#include "chat/text_safety.h"
#include "common/log.h"
#include "common/process_memory.h"
#include "common/utf8.h"
#include "engine/context_size.h"
#include "engine/llama/llama_chat_template.h"
#include "engine/llama/llama_context_setup.h"
#include "engine/llama/llama_decode_call.h"
#include "engine/llama/llama_devices.h"
#include "engine/llama/llama_drafter.h"
#include "engine/llama/llama_placement.h"
#include "engine/llama/llama_sampler.h"
#include "engine/llama/llama_sequence_memory.h"
#include "format/model_file.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama-cpp.h"
#include "llama-ext.h"
#include "llama.h"

namespace llmd::engine {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

class LlamaEngine final : public Engine {
 public:
  explicit LlamaEngine(bool verbose) { InitLlamaBackend(verbose); }
  ~LlamaEngine() override { Release(); }

  Status Load(const EngineConfig& config) override;
  bool loaded() const override { return model_ != nullptr; }
  const ModelInfo& model_info() const override { return info_; }

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

  Result<ChatPlan> ConversationPrompt(const std::vector<chat::Message>& messages, const ChatFormat& format,
                                      bool sanitize) const override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    std::vector<chat::Message> clean = messages;
    for (size_t i = 0; i < clean.size(); ++i) {
      chat::Message& m = clean[i];
      const std::string field = "messages[" + std::to_string(i) + "]";
      if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool") {
        return InvalidArgumentError(field + ".role must be system, user, assistant or tool");
      }
      if ((m.role == "user" || m.role == "tool") && sanitize) {
        LLMD_ASSIGN_OR_RETURN(m.content, chat::SanitizeUserInput(m.content));
      } else if (!IsValidUtf8(m.content)) {
        return InvalidArgumentError(field + ".content is not valid UTF-8");
      }
      for (const auto& call : m.tool_calls) {
        if (!IsValidUtf8(call.name) || !IsValidUtf8(call.arguments) || !IsValidUtf8(call.id)) {
          return InvalidArgumentError(field + ".tool_calls is not valid UTF-8");
        }
      }
    }
    // Tool calls and results in the history need the template's tool rendering too.
    const bool structured = !format.plain() || std::any_of(clean.begin(), clean.end(), [](const chat::Message& m) {
      return m.role == "tool" || !m.tool_calls.empty();
    });
    ChatPlan plan;
    if (!structured) {
      LLMD_ASSIGN_OR_RETURN(plan.prompt, TokenizePieces(chat_template_->Conversation(clean), /*first=*/true));
      return plan;
    }
    LLMD_ASSIGN_OR_RETURN(auto rendered, chat_template_->StructuredConversation(clean, format));
    plan = std::move(rendered.plan);
    LLMD_ASSIGN_OR_RETURN(plan.prompt, TokenizePieces(rendered.pieces, /*first=*/true));
    return plan;
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

  Status DecodeBatch(const std::vector<DecodeItem>& items) override { return Decode(items, nullptr); }

  // A stopped call keeps nothing (DecodeCall) only where its cells can be dropped: recurrent
  // state is changed in place, and the MTP layer follows every target call, so those calls
  // run whole.
  Status DecodeBatchUnlessStopped(const std::vector<DecodeItem>& items, const std::function<bool()>& stop) override {
    if (!info_.memory.partial_truncation || drafter_) return Decode(items, nullptr);
    return Decode(items, &stop);
  }

  Status Decode(const std::vector<DecodeItem>& items, const std::function<bool()>* stop) {
    LLMD_RETURN_IF_ERROR(RequireContext());
    PinCallingThread();
    if (items.empty()) return Status::Ok();
    // llama.cpp asserts (aborts) on more outputs than the context reserved.
    const auto outputs = std::count_if(items.begin(), items.end(), [](const DecodeItem& d) { return d.logits; });
    if (outputs > static_cast<std::ptrdiff_t>(max_outputs_)) {
      return InvalidArgumentError("a decode step asked for " + std::to_string(outputs) + " outputs; at most " +
                                  std::to_string(max_outputs_) + " are reserved");
    }
    // A pool of streams holds the pool's total itself; a call that would hold more is refused
    // as llama.cpp refuses a full cache, changing nothing.
    if (PoolAsStreams(config_)) LLMD_RETURN_IF_ERROR(CheckPoolRoom(ctx_.get(), config_.sequences, config_.pool_tokens, items));
    for (const auto& d : items) {
      if (d.sequence >= 0 && static_cast<size_t>(d.sequence) < written_.size()) {
        written_[d.sequence] = std::max(written_[d.sequence], d.position + 1);
      }
    }
    LLMD_RETURN_IF_ERROR(DecodeCall(ctx_.get(), threadpool_.get(), items, info_.memory, stop));
    if (drafter_) {
      // The target's step stands either way; the MTP layer's sequences in it stop drafting.
      if (Status st = drafter_->AfterTargetDecode(items); !st.ok()) {
        Log(LogLevel::kWarn, "mtp_decode_failed", {{"error", st.ToString()}});
      }
    }
    return Status::Ok();
  }

  std::shared_ptr<const KeptOutput> KeepOutput(int32_t output_index) override {
    // The MTP layer drafts from the hidden state of the token before: it needs that token's
    // decode.
    if (!ctx_ || info_.speculative.mode == SpeculativeMode::kMtp) return nullptr;
    return KeepLogits(ctx_.get(), output_index);
  }

  void BeginDraft(int32_t sequence, std::span<const TokenId> prompt) override {
    if (drafter_) drafter_->Begin(sequence, prompt);
  }

  Status Draft(std::vector<DraftRequest>* requests) override {
    if (!drafter_) return Status::Ok();
    LLMD_RETURN_IF_ERROR(RequireContext());
    PinCallingThread();
    return drafter_->Draft(requests, threadpool_.get());
  }

  void AcceptDraft(int32_t sequence, int32_t accepted) override {
    if (drafter_) drafter_->Accept(sequence, accepted);
  }

  Result<std::vector<float>> Embed(const std::vector<TokenId>& tokens) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    if (!config_.embeddings) return InvalidArgumentError("this model is loaded for generation, not for embeddings");
    if (tokens.empty()) return InvalidArgumentError("the input is empty");
    if (tokens.size() > static_cast<size_t>(config_.batch_tokens)) {
      return InvalidArgumentError("the input is " + std::to_string(tokens.size()) +
                                  " tokens, longer than batch_tokens (" + std::to_string(config_.batch_tokens) + ")");
    }
    LLMD_RETURN_IF_ERROR(RequireContext());
    PinCallingThread();
    llama_memory_t mem = llama_get_memory(ctx_.get());
    llama_memory_seq_rm(mem, 0, -1, -1);
    llama_batch batch = llama_batch_init(static_cast<int32_t>(tokens.size()), 0, 1);
    for (size_t i = 0; i < tokens.size(); ++i) {
      batch.token[i] = tokens[i];
      batch.pos[i] = static_cast<int32_t>(i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = true;  // pooling reads every token's output
    }
    batch.n_tokens = static_cast<int32_t>(tokens.size());
    const int32_t rc = llama_decode(ctx_.get(), batch);
    llama_batch_free(batch);
    const float* pooled = rc == 0 ? llama_get_embeddings_seq(ctx_.get(), 0) : nullptr;
    std::vector<float> out;
    if (pooled != nullptr) out.assign(pooled, pooled + info_.embedding_size);
    llama_memory_seq_rm(mem, 0, -1, -1);
    if (rc != 0) return InternalError("llama_decode failed with code " + std::to_string(rc));
    if (pooled == nullptr) return InternalError("the model gave no pooled embedding");
    double norm = 0;
    for (float v : out) norm += static_cast<double>(v) * v;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (float& v : out) v = static_cast<float>(v / norm);
    }
    return out;
  }

  Status TruncateSequence(int32_t sequence, int32_t position) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    if (!ctx_) return Status::Ok();  // released: every sequence is already empty
    // Recurrent memory refuses a cut inside the sequence (llama-memory-recurrent.cpp seq_rm)
    // and then changes nothing.
    if (!llama_memory_seq_rm(llama_get_memory(ctx_.get()), sequence, position, -1)) {
      return UnimplementedError("this model's memory cannot cut sequence " + std::to_string(sequence) +
                                " at position " + std::to_string(position));
    }
    if (drafter_) drafter_->TruncateTarget(sequence, position);
    return Status::Ok();
  }

  Status CopySequence(int32_t src, int32_t dst) override {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    if (src == dst || !ctx_) return Status::Ok();  // released: both are empty
    llama_memory_t mem = llama_get_memory(ctx_.get());
    if (!llama_memory_seq_rm(mem, dst, -1, -1)) return InternalError("could not clear sequence " + std::to_string(dst));
    if (!StreamPerSequence()) {
      llama_memory_seq_cp(mem, src, dst, -1, -1);  // one shared cache: the cells are shared
    } else if (!CopySequenceState(ctx_.get(), src, dst) || HeldCells(ctx_.get(), config_.sequences) > PoolCells()) {
      llama_memory_seq_rm(mem, dst, -1, -1);
      return ResourceExhaustedError("no room in the KV pool to copy sequence " + std::to_string(src));
    } else {
      written_[dst] = std::max(written_[dst], llama_memory_seq_pos_max(mem, dst) + 1);
    }
    if (drafter_) drafter_->CopyTarget(src, dst);
    return Status::Ok();
  }

  // A whole sequence (KV cells and recurrent state), as llama.cpp's per-sequence state API
  // writes it, which knows recurrent memory. Not with a drafter: its own per-sequence memory
  // would have to move too.
  Result<std::string> ParkSequence(int32_t sequence) override {
    LLMD_RETURN_IF_ERROR(RequireContext());
    if (drafter_) return UnimplementedError("a model with a drafter keeps its sequences in place");
    std::optional<std::string> parked = ReadSequenceState(ctx_.get(), sequence, 0);
    if (!parked.has_value()) return InternalError("could not park sequence " + std::to_string(sequence));
    llama_memory_seq_rm(llama_get_memory(ctx_.get()), sequence, -1, -1);
    return std::move(*parked);
  }

  Status UnparkSequence(int32_t sequence, const std::string& parked) override {
    LLMD_RETURN_IF_ERROR(RequireContext());
    if (drafter_) return UnimplementedError("a model with a drafter keeps its sequences in place");
    size_t read = 0;
    try {
      read = llama_state_seq_set_data_ext(ctx_.get(), reinterpret_cast<const uint8_t*>(parked.data()), parked.size(),
                                          sequence, 0);
    } catch (const std::exception& e) {
      return InternalError(std::string("could not unpark a sequence: ") + e.what());
    }
    llama_memory_t mem = llama_get_memory(ctx_.get());
    if (read == 0 || HeldCells(ctx_.get(), config_.sequences) > PoolCells()) {
      // llama.cpp leaves the sequence empty where the cache had no room; the pool may not.
      llama_memory_seq_rm(mem, sequence, -1, -1);
      return ResourceExhaustedError("no room in the KV cache to unpark sequence " + std::to_string(sequence));
    }
    written_[sequence] = std::max(written_[sequence], llama_memory_seq_pos_max(mem, sequence) + 1);
    return Status::Ok();
  }

  Result<std::string> SaveSequenceState(int32_t sequence) override {
    LLMD_RETURN_IF_ERROR(RequireContext());
    if (!info_.memory.state_checkpoints) return UnimplementedError("this model's memory has no recurrent state");
    // The MTP layer's part (a fixed size, none without it) first, then the recurrent state.
    const std::string target = drafter_ ? drafter_->SaveTargetState(sequence) : std::string();
    std::optional<std::string> state =
        ReadSequenceState(ctx_.get(), sequence, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY, target.size());
    if (!state.has_value()) return InternalError("could not save the state of sequence " + std::to_string(sequence));
    std::copy(target.begin(), target.end(), state->begin());
    return std::move(*state);
  }

  Status RestoreSequenceState(int32_t sequence, const std::string& state) override {
    LLMD_RETURN_IF_ERROR(RequireContext());
    if (!info_.memory.state_checkpoints) return UnimplementedError("this model's memory has no recurrent state");
    const size_t head = drafter_ ? drafter_->target_state_bytes() : 0;
    if (state.size() <= head) return InternalError("a checkpoint of " + std::to_string(state.size()) + " bytes is too short");
    size_t read = 0;
    try {
      read = llama_state_seq_set_data_ext(ctx_.get(), reinterpret_cast<const uint8_t*>(state.data() + head),
                                          state.size() - head, sequence, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
    } catch (const std::exception& e) {
      return InternalError(std::string("could not restore a checkpoint: ") + e.what());
    }
    if (read == 0) return InternalError("could not restore a checkpoint into sequence " + std::to_string(sequence));
    if (drafter_) return drafter_->RestoreTargetState(sequence, std::string_view(state).substr(0, head));
    return Status::Ok();
  }

  TokenId MessageStartToken() const override { return message_start_; }

  Result<std::unique_ptr<Sampler>> NewSampler(const SamplingParams& params,
                                              std::span<const TokenId> context) override {
    LLMD_RETURN_IF_ERROR(RequireContext());
    LLMD_RETURN_IF_ERROR(params.Validate());
    const int32_t n_vocab = llama_vocab_n_tokens(vocab_);
    for (const auto& [token, bias] : params.logit_bias) {
      if (token >= n_vocab) {
        return InvalidArgumentError("logit_bias names token " + std::to_string(token) +
                                    ", which is not in the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
      }
    }
    LLMD_ASSIGN_OR_RETURN(llama_sampler_ptr chain, NewSamplerChain(params));
    llama_sampler_ptr grammar;
    if (!params.grammar.empty()) {
      LLMD_ASSIGN_OR_RETURN(grammar, NewGrammarSampler(params));
    }
    std::vector<std::pair<int32_t, float>> no_end;  // ignore_eos: the end-of-generation tokens banned
    if (params.ignore_eos) {
      for (TokenId t : end_tokens_) no_end.emplace_back(t, -INFINITY);
    }
    LogitAdjustments adjust(params, std::move(no_end));
    const size_t seen = std::min(context.size(), static_cast<size_t>(LogitAdjustments::kPenaltyWindow));
    for (TokenId t : context.last(seen)) adjust.Accept(t);
    return std::unique_ptr<Sampler>(std::make_unique<LlamaSampler>(std::move(chain), std::move(grammar),
                                                                   std::move(adjust), ctx_.get(),
                                                                   [this](TokenId t) { return Piece(t); }));
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

  void ReleaseWorkingMemory() override {
    if (!ctx_) return;
    if (drafter_) drafter_->ReleaseWorkingMemory();
    ctx_.reset();
    std::fill(written_.begin(), written_.end(), 0);
  }

  MemoryUse memory_use() const override;

  void Release() override {
    chat_template_.reset();
    drafter_.reset();  // before the model it checked its vocabulary against
    ctx_.reset();
    written_.clear();
    threadpool_.reset();  // after the context that uses it
    model_.reset();
    vocab_ = nullptr;
    message_start_ = -1;
    end_tokens_.clear();
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

 private:
  Status RequireLoaded() const {
    return loaded() ? Status::Ok() : UnavailableError("no model is loaded");
  }
  // The context, made again after ReleaseWorkingMemory.
  Status RequireContext() {
    LLMD_RETURN_IF_ERROR(RequireLoaded());
    return ctx_ ? Status::Ok() : CreateContext();
  }
  Status CreateContext();
  // Each sequence has a KV stream of its own: a cache per sequence, or a pool of streams.
  bool StreamPerSequence() const { return config_.pool_tokens == 0 || PoolAsStreams(config_); }
  // The cells the sequences may hold together: the pool, else every stream's.
  int64_t PoolCells() const {
    return PoolAsStreams(config_) ? config_.pool_tokens : static_cast<int64_t>(llama_n_ctx(ctx_.get()));
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
  Result<llama_sampler_ptr> NewSamplerChain(const SamplingParams& p) const;
  Result<llama_sampler_ptr> NewGrammarSampler(const SamplingParams& p) const;
  void DescribeModel(const format::ModelFileInfo& file, const LlamaPlacement& placement, ggml_type kv_type);
  std::string Piece(TokenId token, bool special = false) const;

  EngineConfig config_;
  llama_model_ptr model_;
  struct ThreadpoolDeleter {
    void operator()(ggml_threadpool* t) const { ggml_threadpool_free(t); }
  };
  std::unique_ptr<ggml_threadpool, ThreadpoolDeleter> threadpool_;
  std::thread::id pinned_thread_;  // the decoding thread already pinned to config_.cpus
  llama_context_ptr ctx_;  // null after ReleaseWorkingMemory
  std::unique_ptr<LlamaDrafter> drafter_;  // speculative decoding on; null when off
  uint32_t max_outputs_ = 0;  // outputs one decode step may ask for (the context reserves them)
  std::vector<int32_t> written_;  // per sequence: the positions written since the context was made
  uint64_t attention_bytes_per_cell_ = 0;  // the KV cache's bytes per cell (all attention layers)
  uint64_t context_bytes_ = 0, compute_bytes_ = 0;  // what the context allocated, all devices
  mutable std::optional<Clock::time_point> weights_checked_;  // when mapped_resident_ was read
  mutable uint64_t mapped_resident_ = 0;                      // of a memory-mapped model file
  const llama_vocab* vocab_ = nullptr;
  std::unique_ptr<ChatTemplate> chat_template_;
  TokenId message_start_ = -1;
  std::vector<TokenId> end_tokens_;  // the vocabulary's end-of-generation tokens, found at load
  ModelInfo info_;
};

Status LlamaEngine::Load(const EngineConfig& requested) {
  auto start = Clock::now();
  Release();
  if (requested.context_tokens < 0) return InvalidArgumentError("context must be >= 0 (0: automatic)");
  if (requested.batch_tokens <= 0) return InvalidArgumentError("batch_tokens must be > 0");
  if (requested.threads < 0) return InvalidArgumentError("threads must be >= 0");
  if (requested.sequences < 1 || requested.sequences > 64) return InvalidArgumentError("sequences must be 1..64");
  LLMD_ASSIGN_OR_RETURN(ggml_type kv_type, KvCacheType(requested.kv_cache_type));
  LLMD_RETURN_IF_ERROR(FlashAttnType(requested.flash_attention).error());
  LLMD_ASSIGN_OR_RETURN(auto file, format::InspectModelFile(requested.model_path));
  // The context, sized from the file where the config leaves it automatic.
  const EngineConfig config = ResolveContext(
      requested, file.gguf, static_cast<double>(ggml_type_size(kv_type)) / ggml_blck_size(kv_type));
  LLMD_RETURN_IF_ERROR(AddRpcServers(config.rpc_servers));
  // Planned before anything is loaded: a model that cannot fit is refused here, with numbers.
  LLMD_ASSIGN_OR_RETURN(LlamaPlacement placement, PlanLlamaPlacement(config, file.gguf, kv_type));

  llama_model_params mp = llama_model_default_params();
  mp.load_mode = config.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  // The MTP block's weights are skipped unless they draft.
  mp.load_mtp = Speculating(config) && config.speculative.mode == SpeculativeMode::kMtp;
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
  // Before the context: a replacement template that cannot be used fails the load cheaply.
  auto chat_template = ChatTemplate::Create(model_.get(), config.chat_template);
  if (!chat_template.has_value()) {
    Release();
    return chat_template.error().WithContext(config.model_path);
  }
  chat_template_ = std::move(*chat_template);

  config_ = config;
  const bool recurrent = llama_model_is_recurrent(model_.get()) || llama_model_is_hybrid(model_.get());
  if (Speculating(config) && recurrent && std::min(config.batch_tokens, 512) <= config.speculative.draft_max + 1) {
    // A micro-batch must hold a draft and the token before it together (llama.cpp keeps the
    // last draft_max + 1 tokens of a sequence in one, for their state snapshots; it aborts
    // on less).
    Release();
    return InvalidArgumentError("batch_tokens = " + std::to_string(config.batch_tokens) +
                                " is too small for draft_max = " + std::to_string(config.speculative.draft_max) +
                                " on a model with recurrent memory: it must be more than draft_max + 1");
  }
  if (Speculating(config)) {
    // Before the context: the MTP layer's context is made with the target's (AttachTarget).
    auto drafter = LlamaDrafter::Create(config, model_.get());
    if (!drafter.has_value()) {
      Release();
      return drafter.error();
    }
    drafter_ = std::move(*drafter);
  }
  if (Status st = CreateContext(); !st.ok()) {
    Release();
    return st;
  }
  if (config.embeddings && llama_pooling_type(ctx_.get()) == LLAMA_POOLING_TYPE_NONE) {
    Release();
    return InvalidArgumentError(config.model_path + " names no pooling type (<arch>.pooling_type), so it gives no "
                                "embedding of a whole text; load it for generation instead");
  }

  DescribeModel(file, placement, kv_type);
  if (drafter_) {
    info_.speculative = drafter_->info();
    if (info_.memory.state_checkpoints && info_.memory.rollback_tokens < info_.speculative.draft_max) {
      // The scheduler never drafts past what the memory can take back.
      info_.speculative.draft_max = info_.memory.rollback_tokens;
    }
  }
  info_.load_ms = MsSince(start);
  return Status::Ok();
}

Status LlamaEngine::CreateContext() {
  LLMD_ASSIGN_OR_RETURN(ggml_type kv_type, KvCacheType(config_.kv_cache_type));
  LLMD_ASSIGN_OR_RETURN(llama_flash_attn_type fa, FlashAttnType(config_.flash_attention));
  const int threads = ComputeThreads(config_);
  llama_context_params cp = SequenceContextParams(config_);
  // With speculative decoding, one more output per draft token (LlamaOutputsPerStep).
  cp.n_outputs_max = LlamaOutputsPerStep(config_);
  // Speculative decoding on a recurrent state: the states after each of the last draft_max
  // tokens are kept, so that rejected draft tokens can be taken back (llama.cpp clamps this
  // to 0 for architectures that cannot).
  if (Speculating(config_) && (llama_model_is_recurrent(model_.get()) || llama_model_is_hybrid(model_.get()))) {
    cp.n_rs_seq = static_cast<uint32_t>(config_.speculative.draft_max);
  }
  if (config_.embeddings) {
    // A pooled embedding needs its whole input in one micro-batch, and every token's output.
    cp.embeddings = true;
    cp.n_ubatch = cp.n_batch;
    cp.pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;  // the file's
  }
  cp.flash_attn_type = fa;
  cp.type_k = kv_type;
  cp.type_v = kv_type;
  try {
    ctx_.reset(llama_init_from_model(model_.get(), cp));
  } catch (const std::exception& e) {
    return ResourceExhaustedError(std::string("could not create the context: ") + e.what());
  }
  if (!ctx_) {
    return ResourceExhaustedError("could not create a context of " + std::to_string(config_.context_tokens) +
                                  " tokens (out of memory, or see the log lines above)");
  }
  max_outputs_ = cp.n_outputs_max;
  info_.memory.rollback_tokens = static_cast<int32_t>(llama_n_rs_seq(ctx_.get()));
  written_.assign(static_cast<size_t>(config_.sequences), 0);
  // One persistent pool for prompt and generation; without it ggml would start threads for
  // every graph. It outlives a released context.
  if (!threadpool_) {
    ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    tpp.prio = static_cast<ggml_sched_priority>(config_.thread_priority);
    for (int cpu : config_.cpus) {
      if (cpu >= 0 && cpu < GGML_MAX_N_THREADS) tpp.cpumask[cpu] = true;  // every thread may use every listed CPU
    }
    threadpool_.reset(ggml_threadpool_new(&tpp));
    if (!threadpool_) {
      ctx_.reset();
      return ResourceExhaustedError("could not start " + std::to_string(threads) + " compute threads");
    }
  }
  llama_attach_threadpool(ctx_.get(), threadpool_.get(), threadpool_.get());
  AllowStoppedCalls(ctx_.get());
  if (drafter_) {
    if (Status st = drafter_->AttachTarget(ctx_.get(), threadpool_.get()); !st.ok()) {
      ctx_.reset();
      return st;
    }
  }
  context_bytes_ = compute_bytes_ = 0;
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx_.get())) {
    context_bytes_ += mb.context;
    compute_bytes_ += mb.compute;
  }
  return Status::Ok();
}

MemoryUse LlamaEngine::memory_use() const {
  MemoryUse use;
  if (!loaded()) return use;
  for (const auto& d : info_.placement) use.weights.reserved += d.model_bytes;
  if (drafter_) use.weights.reserved += drafter_->weight_bytes();
  // Weights read into memory are resident whole; mapped ones as far as the kernel keeps them.
  use.weights.resident = use.weights.reserved;
  if (config_.use_mmap) {
    // The model's page map is read at most once a second; the scheduler asks after every step.
    if (!weights_checked_ || MsSince(*weights_checked_) > 1000) {
      mapped_resident_ = MappedFileResidentBytes(config_.model_path);
      weights_checked_ = Clock::now();
    }
    use.weights.resident = std::min(use.weights.reserved, mapped_resident_);
  }
  use.working_memory = ctx_ != nullptr;
  if (!ctx_) return use;
  use.compute.reserved = use.compute.resident = compute_bytes_;  // counted whole while it exists
  // A sequence's cells are written from its start, and a shared pool's are taken from its
  // start (llama.cpp's slot search goes back to the first free cell): the positions written
  // bound the committed pages.
  uint64_t written = 0;
  for (int32_t w : written_) written += static_cast<uint64_t>(w);
  const auto cells = static_cast<uint64_t>(llama_n_ctx(ctx_.get()));  // every stream's
  const uint64_t pool = PoolAsStreams(config_) ? static_cast<uint64_t>(config_.pool_tokens) : 0;
  const KvBytes kv = SequenceKvBytes(context_bytes_, attention_bytes_per_cell_, cells, pool, written);
  // The draft model's context is made for the same sequences (SequenceContextParams); its
  // cells are all attention.
  const uint64_t draft_bytes = drafter_ ? drafter_->context_bytes() : 0;
  const KvBytes draft = SequenceKvBytes(draft_bytes, draft_bytes / std::max<uint64_t>(1, cells), cells, pool, written);
  use.kv.reserved = kv.reserved + draft.reserved;
  use.kv.resident = kv.resident + draft.resident;
  return use;
}

void LlamaEngine::DescribeModel(const format::ModelFileInfo& file, const LlamaPlacement& placement, ggml_type kv_type) {
  char desc[256];
  llama_model_desc(model_.get(), desc, sizeof desc);
  info_.architecture = file.gguf.architecture;
  info_.description = desc;
  info_.file_bytes = file.file_bytes;
  info_.parameters = llama_model_n_params(model_.get());
  info_.context_tokens = static_cast<int32_t>(llama_n_ctx_seq(ctx_.get()));
  info_.pool_tokens = config_.pool_tokens == 0  ? 0
                      : PoolAsStreams(config_) ? config_.pool_tokens
                                               : static_cast<int32_t>(llama_n_ctx(ctx_.get()));
  info_.trained_context = static_cast<int32_t>(llama_model_n_ctx_train(model_.get()));
  info_.sequences = config_.sequences;
  info_.vocab_size = llama_vocab_n_tokens(vocab_);
  info_.embeddings = config_.embeddings;
  info_.embedding_size = llama_model_n_embd(model_.get());
  {
    // FNV-1a over what identifies the model's weights and vocabulary.
    std::string id = info_.architecture + "|" + info_.description + "|" + std::to_string(info_.file_bytes) + "|" +
                     std::to_string(info_.parameters) + "|" + std::to_string(info_.vocab_size) + "|" +
                     file.gguf.name + "|" + std::to_string(file.gguf.tensor_bytes);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
    info_.fingerprint = h;
  }
  // A recurrent state (Gated DeltaNet, Mamba) cannot be cut inside a sequence; its state
  // after a prefix is saved and restored instead (llama_state_seq_*_ext, PARTIAL_ONLY).
  const bool recurrent = llama_model_is_recurrent(model_.get()) || llama_model_is_hybrid(model_.get());
  info_.memory.partial_truncation = !recurrent;
  info_.memory.state_checkpoints = recurrent;
  info_.memory.decode_shape_tokens = recurrent ? static_cast<int32_t>(llama_n_ubatch(ctx_.get())) : 0;
  info_.memory.sequence_copy = true;
  // A dense model's prompt tokens take the kernels of their cold prefill (FlashAttnRows); a
  // hybrid's calls have their cold shapes and positions already (decode_shape_tokens), and
  // take a kernel by those alone.
  info_.memory.prompt_call_tokens = recurrent ? 0 : static_cast<int32_t>(llama_n_ubatch(ctx_.get()));
  info_.memory.prompt_calls_apart = !recurrent && StreamPerSequence();
  info_.memory.stream_per_sequence = StreamPerSequence();
  info_.has_chat_template = chat_template_->from_model();
  info_.placement = MeasurePlacement(ctx_.get(), placement.plan);
  info_.placement_plan = placement.plan.Describe();
  info_.placement_why = placement.plan.why;
  // What llama.cpp allocated for the sequences' memory (KV and recurrent state) where it
  // says; the K/V formula otherwise (it over-counts hybrid models, whose GDN layers hold no KV).
  uint64_t allocated = 0;
  for (const auto& d : info_.placement) allocated += d.context_bytes;
  info_.kv_cache_bytes =
      allocated > 0 ? allocated : KvCacheBytes(model_.get(), file.gguf.architecture, kv_type, llama_n_ctx(ctx_.get()));
  attention_bytes_per_cell_ =
      KvBytesPerToken(file.gguf, static_cast<double>(ggml_type_size(kv_type)) / ggml_blck_size(kv_type));
  if (PoolAsStreams(config_)) {
    info_.kv_cache_bytes = SequenceKvBytes(info_.kv_cache_bytes, attention_bytes_per_cell_, llama_n_ctx(ctx_.get()),
                                           static_cast<uint64_t>(config_.pool_tokens), 0)
                               .reserved;
  }
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
  // <|im_start|> as one control token, where the vocabulary has it.
  auto start = Tokenize("<|im_start|>", false, true);
  message_start_ = start.has_value() && start->size() == 1 ? start->front() : -1;
  end_tokens_.clear();
  for (int32_t t = 0; t < llama_vocab_n_tokens(vocab_); ++t) {
    if (llama_vocab_is_eog(vocab_, t)) end_tokens_.push_back(t);
  }
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

// The grammar as a sampler: lazy (free until a trigger) or not, with the text the template
// already put in the prompt consumed first, as llama.cpp's common_sampler_init does it.
Result<llama_sampler_ptr> LlamaEngine::NewGrammarSampler(const SamplingParams& p) const {
  llama_sampler* grammar = nullptr;
  try {
    if (p.grammar_lazy) {
      std::vector<const char*> patterns;
      for (const auto& pattern : p.grammar_trigger_patterns) patterns.push_back(pattern.c_str());
      grammar = llama_sampler_init_grammar_lazy_patterns(vocab_, p.grammar.c_str(), "root", patterns.data(),
                                                         patterns.size(), p.grammar_trigger_tokens.data(),
                                                         p.grammar_trigger_tokens.size());
    } else {
      grammar = llama_sampler_init_grammar(vocab_, p.grammar.c_str(), "root");
    }
  } catch (const std::exception&) {
    grammar = nullptr;
  }
  if (grammar == nullptr) return InvalidArgumentError("the grammar does not parse (GBNF, rule \"root\")");
  llama_sampler_ptr owned(grammar);
  if (p.grammar_prefill.empty()) return owned;
  LLMD_ASSIGN_OR_RETURN(auto prefill, Tokenize(p.grammar_prefill, false, true));
  try {
    for (size_t i = 0; i < prefill.size(); ++i) {
      const std::string piece = Piece(prefill[i], /*special=*/true);
      // Some tokenizers put a space before the first special token; the grammar has none.
      if (i == 0 && !piece.empty() && std::isspace(static_cast<unsigned char>(piece[0])) &&
          !std::isspace(static_cast<unsigned char>(p.grammar_prefill[0]))) {
        continue;
      }
      llama_sampler_accept(owned.get(), prefill[i]);
    }
  } catch (const std::exception&) {
    return InternalError("the template's grammar does not accept its own generation prompt");
  }
  return owned;
}

// The choice of a token only: biases and penalties are LogitAdjustments', applied before.
Result<llama_sampler_ptr> LlamaEngine::NewSamplerChain(const SamplingParams& p) const {
  auto params = llama_sampler_chain_default_params();
  params.no_perf = true;
  llama_sampler_ptr chain(llama_sampler_chain_init(params));
  if (p.temperature <= 0.0f) {
    llama_sampler_chain_add(chain.get(), llama_sampler_init_greedy());
    return chain;
  }
  llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(p.top_k));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_top_p(p.top_p, 1));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_temp(p.temperature));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_dist(p.seed));
  return chain;
}

}  // namespace

std::unique_ptr<Engine> NewLlamaEngine(bool verbose) {
  return std::make_unique<LlamaEngine>(verbose);
}

}  // namespace llmd::engine
