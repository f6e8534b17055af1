// Engine: the interface every inference backend implements (llama.cpp today; ExecuTorch in
// builds that have it). Our own types only; llama.cpp stays behind src/engine/llama/.
//
// Thread-safety: an Engine and its ChatSessions are used from one thread at a time (the
// scheduler's engine thread owns them). Lifetime: a ChatSession must not outlive its Engine.
#ifndef LLMD_ENGINE_ENGINE_H_
#define LLMD_ENGINE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::engine {

// Facts about the loaded model.
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

struct ModelInfo {
  std::string architecture;
  std::string description;   // e.g. "qwen3 0.6B Q4_0"
  uint64_t file_bytes = 0;
  uint64_t parameters = 0;
  int32_t context_tokens = 0;  // the KV cache size in use
  int32_t vocab_size = 0;
  bool has_chat_template = false;  // false: the ChatML fallback is used
  uint8_t device_index = 0;  // the main device's index among the build's devices (0: CPU)
  int32_t sequences = 1;     // sequences that can decode together
  uint64_t fingerprint = 0;  // identifies the model (saved sessions must match it)
  uint64_t kv_cache_bytes = 0;
  std::vector<DevicePlacement> placement;  // the CPU first, then each configured device
  std::vector<std::string> placement_plan; // the plan in words, one line per device
  std::string placement_why;               // how the split was chosen
};

// A multi-turn conversation that keeps the exact tokens it fed and generated, so turn N+1
// prefills only its new text and reuses turn N's KV cache (re-rendering the history through
// a template would change it: Qwen3 drops empty think blocks from past turns).
class ChatSession {
 public:
  virtual ~ChatSession() = default;

  // Sends one user message and generates the assistant's reply, which joins the history.
  // On error the history is unchanged. A cancelled reply is kept as far as it got.
  virtual Result<Completion> Send(std::string_view user, const GenerateOptions& options,
                                  const TextSink& on_text = {}) = 0;

  // Every token of the conversation so far, in order.
  virtual const std::vector<TokenId>& tokens() const = 0;
  virtual int32_t turns() const = 0;
};

// One token of a multi-sequence decode step (see Engine::DecodeBatch).
struct DecodeItem {
  int32_t sequence = 0;  // 0 .. sequences-1
  int32_t position = 0;  // the token's position in its sequence
  TokenId token = 0;
  bool logits = false;   // sample after this token (its index in the batch is the output index)
};

// A per-request sampling state (penalties remember what it sampled). Engine thread only;
// must not outlive its Engine.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // Samples from the logits of batch item `output_index` of the last DecodeBatch, and
  // remembers the token.
  virtual TokenId Sample(int32_t output_index) = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Loads the model named by config.model_path, after the format pre-check. Replaces any
  // model already loaded. On error nothing is loaded.
  virtual Status Load(const EngineConfig& config) = 0;
  virtual bool loaded() const = 0;
  virtual const ModelInfo& model_info() const = 0;  // valid until the next Load or Release

  // One-shot chat: renders {system, user} with the model's template (thinking off), then
  // generates. `user` goes through SanitizeUserInput (invalid UTF-8: InvalidArgument) and is
  // tokenized as plain text, so a typed "<|im_end|>" is never a control token. A prompt that
  // leaves no room for max_tokens in the context is InvalidArgument with both numbers.
  virtual Result<Completion> Generate(std::string_view system, std::string_view user,
                                      const GenerateOptions& options,
                                      const TextSink& on_text = {}) = 0;

  // Raw completion: `prompt` is tokenized as plain text (BOS added if the model wants one)
  // with no template. For /v1/completions and for parity with llama.cpp's reference programs.
  virtual Result<Completion> Complete(std::string_view prompt, const GenerateOptions& options,
                                      const TextSink& on_text = {}) = 0;

  // Starts a conversation with an optional system prompt.
  virtual Result<std::unique_ptr<ChatSession>> StartChat(std::string_view system) = 0;

  // Tokenizes `text`; parse_special=true lets control-token text become control tokens.
  virtual Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_bos,
                                                bool parse_special) const = 0;

  // The text of `tokens`; render_special=true spells control tokens ("<|im_end|>"), false
  // renders them as nothing, as generation output does.
  virtual Result<std::string> Detokenize(const std::vector<TokenId>& tokens,
                                         bool render_special) const = 0;

  // --- Multi-sequence decoding, for the scheduler. The single-sequence calls above use
  // sequence 0; do not mix the two on one engine at the same time.

  int32_t sequences() const { return model_info().sequences; }
  // The whole prompt of a one-shot chat request, as Generate would feed it: the user text
  // sanitized (`sanitize` false: only checked for valid UTF-8), the template applied.
  virtual Result<std::vector<TokenId>> ChatPrompt(std::string_view system, std::string_view user,
                                                  bool sanitize) const = 0;
  // What follows a previous reply's tokens to start the next chat turn (ChatSession's rule).
  virtual Result<std::vector<TokenId>> NextTurnPrompt(std::string_view system, std::string_view user,
                                                      bool sanitize) const = 0;
  // The prompt of a whole conversation (OpenAI messages) with the template applied and the
  // generation prompt last. Contents are tokenized as plain text; "user" contents go through
  // SanitizeUserInput when `sanitize`, every other content is only checked for valid UTF-8.
  // A role other than system, user or assistant is InvalidArgument.
  virtual Result<std::vector<TokenId>> ConversationPrompt(const std::vector<chat::Message>& messages,
                                                          bool enable_thinking, bool sanitize) const = 0;
  // A raw completion prompt, as Complete would feed it (plain text, BOS if the model wants one).
  virtual Result<std::vector<TokenId>> CompletionPrompt(std::string_view prompt) const = 0;
  // Decodes one batch (prompt chunks and/or one new token per sequence) in one llama_decode.
  virtual Status DecodeBatch(const std::vector<DecodeItem>& items) = 0;
  // Drops the KV cache of `sequence` from `position` on.
  virtual void TruncateSequence(int32_t sequence, int32_t position) = 0;
  virtual Result<std::unique_ptr<Sampler>> NewSampler(const SamplingParams& params) = 0;
  virtual bool IsEndOfGeneration(TokenId token) const = 0;
  // The bytes of a token as generated text (control tokens render as nothing).
  virtual std::string TokenText(TokenId token) const = 0;

  // Stats of the most recent generation.
  virtual GenerationStats last_stats() const = 0;

  // Clears the KV cache; the next request prefills from scratch.
  virtual void Reset() = 0;
  // Frees the model and context; loaded() becomes false.
  virtual void Release() = 0;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_ENGINE_H_
