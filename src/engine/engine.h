// Engine: the interface every inference backend implements (llama.cpp today; ExecuTorch in
// builds that have it). Our own types only; llama.cpp stays behind src/engine/llama/.
//
// Thread-safety: an Engine is used from one thread at a time (the scheduler's engine thread
// owns it), except Tokenize and Detokenize, which any thread may call while the engine
// decodes (the vocabulary is read-only; EngineWorker::Tokenize keeps the engine from being
// swapped meanwhile). Lifetime: a Sampler must not outlive its Engine.
#ifndef LLMD_ENGINE_ENGINE_H_
#define LLMD_ENGINE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::engine {

// What a model's sequence memory can do. The scheduler plans prefix reuse with this and never
// asks for an operation the memory cannot do.
struct MemoryCapabilities {
  // Attention KV: a sequence can be cut at any position. A recurrent state (Gated DeltaNet,
  // Mamba) summarises the whole sequence and can only be dropped whole, or "cut" at its end.
  bool partial_truncation = true;
  // SaveSequenceState/RestoreSequenceState hold what truncation cannot restore: the recurrent
  // state after a given position (hybrid and recurrent models).
  bool state_checkpoints = false;
  // CopySequence works (a whole sequence into another slot).
  bool sequence_copy = true;
  // Recurrent memory without partial_truncation can still drop up to this many tokens from
  // the end of a sequence right after the decode that added them (llama.cpp's n_rs_seq
  // snapshots): how speculative decoding takes back rejected draft tokens. 0: never.
  int32_t rollback_tokens = 0;
  // > 0 where a sequence's arithmetic depends on how its tokens are grouped into decode calls:
  // recurrent kernels compute a run of tokens in chunks and one token alone, equal only in
  // exact arithmetic, and llama.cpp cuts a call holding sequences of different lengths into
  // equal pieces. The scheduler then cuts every prompt at the same places whatever the cache
  // holds and gives each sequence's tokens a call of their own shape (sched/prefill_cuts.h,
  // sched/decode_calls.h). The value: the most tokens one call computes in one piece (n_ubatch).
  int32_t decode_shape_tokens = 0;
  // > 0: a prompt token's arithmetic depends on the micro-batch of this many tokens its cold
  // prefill computes it in (engine/prompt_kernels.h). The scheduler then never lets a prompt
  // chunk cross a multiple of it, never reuses generated tokens as a prompt's prefix (they were
  // decoded as generation steps), and reuses a prefix only as far as SameKernelPrefix says.
  int32_t prompt_call_tokens = 0;
  // A step's generated tokens go in one call and each sequence's prompt chunk in a call of
  // its own, so each is a prompt call (Engine::DecodeBatch). Set where that costs no extra
  // pass over the weights: each sequence has a KV stream of its own, and llama.cpp cuts a
  // mixed call into micro-batches by sequence anyway. In one shared pool a mixed step stays
  // one call (its prompt chunks then take ggml's own kernels).
  bool prompt_calls_apart = false;
  // Each sequence has a KV stream of its own: llama.cpp computes each run of consecutive
  // sequence ids in a decode call as a micro-batch of its own (split_equal, sequential), a
  // pass over the weights each (sched/step_policy.h).
  bool stream_per_sequence = false;
};

// What the loaded engine drafts with (EngineConfig::speculative).
struct SpeculativeInfo {
  SpeculativeMode mode = SpeculativeMode::kOff;
  int32_t draft_max = 0;       // 0: no drafting
  int32_t draft_min = 0;
  std::string draft_model;     // kDraft: the draft model's description ("qwen3 0.6B Q4_0")
  // Benchmarks only (SpeculativeConfig::synthetic_acceptance_length): the probability that
  // the draft token at each position is accepted, given the ones before it were; empty:
  // drafts are verified against the target, as always outside benchmarks.
  std::vector<double> synthetic_acceptance;
};

// What one device holds of a loaded model: the plan, then what llama.cpp allocated.
struct DevicePlacement {
  std::string device;      // "CPU", "CUDA0", "RPC0", ...
  int32_t layers = 0;      // repeating layers held
  bool output = false;     // holds the output head
  uint64_t planned_bytes = 0;  // the planner's weights + KV + compute estimate
  uint64_t planned_weight_bytes = 0;
  uint64_t model_bytes = 0;    // allocated: weights
  uint64_t context_bytes = 0;  // allocated: KV cache and outputs
  uint64_t compute_bytes = 0;  // allocated: scheduler scratch
};

// Bytes of one kind of model memory: allocated (address space, what the budget counts) and
// resident (in RAM or device memory now). llama.cpp's KV cache commits its pages on first
// write (patches/llama.cpp/0001), so a cache holds what its tokens use.
struct MemoryBytes {
  uint64_t reserved = 0;
  uint64_t resident = 0;
};

// What a loaded model holds now, all devices together.
struct MemoryUse {
  MemoryBytes weights;
  MemoryBytes kv;       // KV cache and recurrent states
  MemoryBytes compute;  // scratch and output buffers
  bool working_memory = true;  // false after ReleaseWorkingMemory, until the next decode
};

struct ModelInfo {
  std::string architecture;
  std::string description;   // e.g. "qwen3 0.6B Q4_0"
  uint64_t file_bytes = 0;
  uint64_t parameters = 0;
  int32_t context_tokens = 0;  // the most tokens one request may hold (prompt and answer)
  // The cells of the one KV pool the sequences share (a request may use all of it); 0: each
  // sequence has a stream of context_tokens of its own.
  int32_t pool_tokens = 0;
  int32_t trained_context = 0;  // the context the model was trained for; 0: the file does not say
  int32_t vocab_size = 0;
  bool has_chat_template = false;  // false: the ChatML fallback is used
  uint8_t device_index = 0;  // the main device's index among the build's devices (0: CPU)
  int32_t sequences = 1;     // sequences that can decode together
  uint64_t fingerprint = 0;  // identifies the model (saved sessions must match it)
  uint64_t kv_cache_bytes = 0;
  MemoryCapabilities memory;
  SpeculativeInfo speculative;
  bool embeddings = false;     // loaded for embeddings: Embed works, generation does not
  int32_t embedding_size = 0;  // the model's n_embd
  double load_ms = 0;        // how long Load took
  std::vector<DevicePlacement> placement;  // the CPU first, then each configured device
  std::vector<std::string> placement_plan; // the plan in words, one line per device
  std::string placement_why;               // how the split was chosen
};

// One token of a multi-sequence decode step (see Engine::DecodeBatch).
struct DecodeItem {
  int32_t sequence = 0;  // 0 .. sequences-1
  int32_t position = 0;  // the token's position in its sequence
  TokenId token = 0;
  bool logits = false;   // sample after this token (its index in the batch is the output index)
  // A prompt token: the length of its whole prompt (0: a generated token). A call of one
  // sequence's prompt tokens is computed as the cold prefill of that prompt computes them,
  // whatever was cached before them (Engine::DecodeBatch).
  int32_t prompt_tokens = 0;
};

// One sequence's request for a draft (see Engine::Draft).
struct DraftRequest {
  int32_t sequence = 0;
  std::span<const TokenId> history;  // what the sequence holds, positions 0 .. n-1
  TokenId last = 0;                  // sampled and not yet decoded: it goes at position n
  int32_t max_tokens = 0;            // at most this many (> 0)
  std::vector<TokenId> draft;        // out: the guesses for positions n+1, n+2, ...
};

// One batch item's logits, kept past the next DecodeBatch (Engine::KeepOutput): a prompt's
// last token's, which an exact repeat of that prompt samples its first token from instead of
// decoding the token again. Immutable; only the engine that made it reads it.
class KeptOutput {
 public:
  virtual ~KeptOutput() = default;
};

// The logits a sample is drawn from.
struct Output {
  int32_t index = 0;                 // batch item `index` of the last DecodeBatch,
  const KeptOutput* kept = nullptr;  // or, where set, logits kept from an earlier one
  int32_t sequence = 0;              // with `kept`: the sequence the sampled token goes in
};

// A per-request sampling state (penalties and the grammar remember what it sampled). Engine
// thread only; must not outlive its Engine.
class Sampler {
 public:
  static constexpr TokenId kNoToken = -1;
  virtual ~Sampler() = default;
  // Samples from the logits at `at`, and remembers the token. kNoToken when the grammar
  // allows no token at all.
  virtual TokenId Sample(const Output& at) = 0;
  // The log-probability of `token` at that output and the `top` most likely tokens there,
  // from the model's distribution (SamplingParams::top_logprobs).
  virtual TokenLogprob Logprob(const Output& at, TokenId token, int32_t top) = 0;
};

// A chat prompt and what its reply must follow: the template's grammar for tool calls or a
// JSON schema (with its triggers), extra stop strings, and the parser that takes the reply
// apart. The scheduler sees only these, never the template's format.
struct ChatPlan {
  std::vector<TokenId> prompt;
  std::string grammar;  // GBNF; empty: free text
  bool grammar_lazy = false;
  std::vector<std::string> grammar_trigger_patterns;
  std::vector<TokenId> grammar_trigger_tokens;
  std::string grammar_prefill;
  std::vector<std::string> stops;
  std::shared_ptr<const ReplyParser> parser;  // null: plain text
};

// The interface a backend implements: templates and tokenizer, one batched decode step,
// per-sequence memory operations, samplers and model facts. Generation itself (prefix reuse,
// budgets, sampling, think stripping, stop strings) lives in the scheduler, once, for every
// backend and caller.
class Engine {
 public:
  virtual ~Engine() = default;

  // Loads the model named by config.model_path, after the format pre-check. Replaces any
  // model already loaded. On error nothing is loaded.
  virtual Status Load(const EngineConfig& config) = 0;
  virtual bool loaded() const = 0;
  virtual const ModelInfo& model_info() const = 0;  // valid until the next Load or Release
  int32_t sequences() const { return model_info().sequences; }

  // Tokenizes `text`; parse_special=true lets control-token text become control tokens.
  virtual Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_bos,
                                                bool parse_special) const = 0;
  // The text of `tokens`; render_special=true spells control tokens ("<|im_end|>"), false
  // renders them as nothing, as generation output does.
  virtual Result<std::string> Detokenize(const std::vector<TokenId>& tokens,
                                         bool render_special) const = 0;

  // --- Prompts. User text is tokenized as plain text, so a typed "<|im_end|>" is never a
  // control token; with `sanitize` it goes through SanitizeUserInput first (invalid UTF-8 is
  // InvalidArgument either way).

  // A one-shot chat turn {system, user} with the model's template, thinking off.
  virtual Result<std::vector<TokenId>> ChatPrompt(std::string_view system, std::string_view user,
                                                  bool sanitize) const = 0;
  // What follows a previous reply's tokens to start the next chat turn.
  virtual Result<std::vector<TokenId>> NextTurnPrompt(std::string_view system, std::string_view user,
                                                      bool sanitize) const = 0;
  // A whole conversation (OpenAI messages) with the generation prompt last, shaped by
  // `format` (tools, schema, thinking). "user" and "tool" contents are sanitized when
  // `sanitize`; an unknown role, tools on a template that cannot call them, or a schema that
  // cannot become a grammar is InvalidArgument naming the problem.
  virtual Result<ChatPlan> ConversationPrompt(const std::vector<chat::Message>& messages, const ChatFormat& format,
                                              bool sanitize) const = 0;
  // A raw completion prompt: plain text, BOS if the model wants one, no template.
  virtual Result<std::vector<TokenId>> CompletionPrompt(std::string_view prompt) const = 0;
  // The token that opens a message in this model's template (<|im_start|>), or -1. Message
  // boundaries are where recurrent-state checkpoints pay off.
  virtual TokenId MessageStartToken() const = 0;

  // --- One decode step over several sequences.

  // Decodes one batch (prompt chunks and/or one new token per sequence) in one call. A call
  // whose tokens are all prompt tokens of one kind (MemoryCapabilities::prompt_call_tokens)
  // is a prompt call: they come out in the bits of their prompt's cold prefill, whatever the
  // call's length, so a prompt after a cached prefix gives the cold answer. (A generated
  // token is decoded as a generation step, which the same token inside a prompt is not.)
  virtual Status DecodeBatch(const std::vector<DecodeItem>& items) = 0;
  // DecodeBatch that may stop before it ends once `stop()` turns true: Cancelled, and every
  // sequence of the call holds what it held before it (nothing of the call is kept). `stop` is
  // asked often while the call computes, from a compute thread: it must be cheap and
  // thread-safe. A higher class's request arriving stops a lower class's call this way, so it
  // waits for no more than one of the engine's operations. An engine that cannot undo a call
  // it stopped (recurrent state is changed in place) decodes it whole: the default.
  virtual Status DecodeBatchUnlessStopped(const std::vector<DecodeItem>& items, const std::function<bool()>& stop) {
    (void)stop;
    return DecodeBatch(items);
  }
  // The logits of batch item `output_index` of the last DecodeBatch, kept for a later Sample
  // (Output::kept). Null where this engine cannot sample a token without its decode (the
  // default; a drafter that needs the hidden state of the token before).
  virtual std::shared_ptr<const KeptOutput> KeepOutput(int32_t /*output_index*/) { return nullptr; }
  // `context`: the tokens the sequence already holds (the prompt); the penalties' window
  // starts with the last of them, as llama.cpp's own programs start it.
  virtual Result<std::unique_ptr<Sampler>> NewSampler(const SamplingParams& params,
                                                      std::span<const TokenId> context) = 0;
  virtual bool IsEndOfGeneration(TokenId token) const = 0;
  // The bytes of a token as generated text (control tokens render as nothing).
  virtual std::string TokenText(TokenId token) const = 0;

  // --- Speculative decoding (model_info().speculative.draft_max > 0). The scheduler decodes
  // `last` and the draft in one step with logits at each, samples in order while the samples
  // match the draft, and takes the rest back with TruncateSequence.

  // A new generation starts on `sequence` from `prompt` (n-gram drafters index it).
  virtual void BeginDraft(int32_t /*sequence*/, std::span<const TokenId> /*prompt*/) {}
  // Drafts for several sequences at once (one draft-model decode per drafted position for all
  // of them). A request may come back with no draft. Errors are the draft model's; the
  // target is untouched either way.
  virtual Status Draft(std::vector<DraftRequest>* /*requests*/) { return Status::Ok(); }
  // The target accepted `accepted` tokens of the sequence's last draft.
  virtual void AcceptDraft(int32_t /*sequence*/, int32_t /*accepted*/) {}

  // --- Embeddings (a model loaded with EngineConfig::embeddings).

  // The pooled embedding of one input (the pooling the model file names), L2-normalized.
  // InvalidArgument when the model was loaded for generation, or the input is empty or
  // longer than batch_tokens.
  virtual Result<std::vector<float>> Embed(const std::vector<TokenId>& tokens) = 0;

  // --- Sequence memory. Each returns Unimplemented when the memory cannot do it (see
  // MemoryCapabilities); the sequence is then unchanged.

  // Drops `sequence` from `position` on (0: all of it).
  virtual Status TruncateSequence(int32_t sequence, int32_t position) = 0;
  // Makes `dst` a copy of the whole of `src` (what was in `dst` is dropped).
  virtual Status CopySequence(int32_t src, int32_t dst) = 0;
  // The part of a sequence's memory that truncation cannot rebuild (the recurrent state), as
  // bytes; RestoreSequenceState puts it back into any sequence.
  virtual Result<std::string> SaveSequenceState(int32_t sequence) = 0;
  virtual Status RestoreSequenceState(int32_t sequence, const std::string& state) = 0;
  // The whole of a sequence's memory (its KV cells and any recurrent state) as bytes in host
  // memory, and the sequence emptied, so its cells serve other sequences; UnparkSequence puts
  // it back into the same, empty, sequence. Unimplemented where a drafter keeps per-sequence
  // memory of its own. UnparkSequence is ResourceExhausted while there is no room for it.
  virtual Result<std::string> ParkSequence(int32_t /*sequence*/) { return UnimplementedError("parking is not supported"); }
  virtual Status UnparkSequence(int32_t /*sequence*/, const std::string& /*parked*/) {
    return UnimplementedError("parking is not supported");
  }

  // --- Working memory: what the sequences hold (KV cache, recurrent states) and the compute
  // scratch, beside the weights.

  // Frees the working memory and keeps the weights: every sequence becomes empty, and the
  // next call that needs the memory makes it again (the cost is paid by that call). Only while
  // no Sampler exists.
  virtual void ReleaseWorkingMemory() = 0;
  // Reserved and resident bytes of each kind (MemoryUse).
  virtual MemoryUse memory_use() const = 0;

  // Frees the model and context; loaded() becomes false.
  virtual void Release() = 0;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_ENGINE_H_
