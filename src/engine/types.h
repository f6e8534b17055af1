// Value types shared by every engine: configuration, sampling, statistics.
// Our own types only: nothing here names llama.cpp.
#ifndef LLMD_ENGINE_TYPES_H_
#define LLMD_ENGINE_TYPES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/prompt_pieces.h"
#include "llmd/result.h"
#include "llmd/status.h"

namespace llmd::engine {

using TokenId = int32_t;

// How offloaded layers spread over several devices (llama.cpp's split modes).
enum class SplitMode {
  kLayer,  // each device holds whole layers
  kRow,    // matrices split by rows across the devices (backends that support it, e.g. CUDA)
  kNone,   // everything offloaded goes to the main device
};

// A configured limit on what a device may hold, e.g. ~3.5 GB for one Hexagon session.
struct DeviceCap {
  std::string device;
  uint64_t bytes = 0;
};

// Speculative decoding: where draft tokens come from. The scheduler verifies every draft in
// the target's own decode step, so the output is the target's either way.
enum class SpeculativeMode {
  kOff,
  kNgram,  // n-grams of the sequence's own tokens (llama.cpp's lookup kinds); no second model
  kDraft,  // a smaller model with the same vocabulary
  kMtp,    // the target's own multi-token-prediction layer (nextn_predict_layers)
};
std::string_view SpeculativeModeName(SpeculativeMode mode);
// "off", "ngram", "draft" or "mtp"; InvalidArgument otherwise.
Result<SpeculativeMode> ParseSpeculativeMode(std::string_view name);

struct SpeculativeConfig {
  SpeculativeMode mode = SpeculativeMode::kOff;
  std::string draft_model_path;  // kDraft: an attention-only model with the target's vocabulary
  int32_t draft_max = 4;         // tokens drafted per sequence and step, 1..32
  int32_t draft_min = 0;         // a shorter draft is not verified (0..draft_max)
  float draft_p_min = 0.0f;      // kDraft, kMtp: drafting stops at a token less likely than this
  std::string ngram_kind = "simple";  // kNgram: simple, map-k, map-k4v or mod (llama.cpp's names)
  int32_t ngram_size_n = 12;     // kNgram simple/map-k/map-k4v: tokens of the key matched
  int32_t ngram_size_m = 48;     // ... and at most this many proposed after it
  // BENCHMARKS ONLY (llama-server's --spec-synth-len): each draft token is accepted at random
  // so that the mean accepted length is this, whatever the target computed; the text is not
  // the model's. 0: off. The daemon refuses it without --benchmark.
  double synthetic_acceptance_length = 0;

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
};

// How the engine loads a model and sizes its context.
struct EngineConfig {
  std::string model_path;
  // Tokens one request may hold (the seed's max_context_len), each sequence with a KV stream
  // of its own. 0: automatic (engine/context_size.h): one pool shared by the sequences.
  int32_t context_tokens = 0;
  // The cells of one KV pool every sequence draws on; 0: a stream per sequence. Set by
  // ResolveContext when context_tokens is automatic.
  int32_t pool_tokens = 0;
  // An automatic pool's KV cache takes at most this many bytes (the memory budget's share);
  // 0: the model's trained context, whatever it takes.
  uint64_t kv_budget_bytes = 0;
  int32_t sequences = 1;           // sequences decoded together (continuous batching slots)
  int32_t batch_tokens = 512;      // prompt tokens per decode call
  int32_t threads = 0;             // 0: one per online CPU
  std::vector<int> cpus;           // pin the compute threads to these CPUs; empty: not pinned
  int32_t thread_priority = 0;     // 0 normal, 1 medium, 2 high, 3 realtime (ggml's levels)
  int32_t gpu_layers = 0;          // layers to offload to the devices; -1: all; -2: as many as fit
  std::vector<std::string> devices;  // ggml device names, e.g. "CUDA0", "HTP0", "RPC0"; empty: CPU
  SplitMode split_mode = SplitMode::kLayer;
  std::vector<float> tensor_split;   // proportions per device; empty: the planner chooses
  std::string main_device;           // one of `devices`; empty: the first
  std::vector<DeviceCap> device_caps;
  std::vector<std::string> rpc_servers;  // "host:port" of ggml-rpc-servers, seen as RPC0, RPC1, ...
  // Read, not mapped, by default: the CPU backend repacks most weights into its own buffers,
  // so a mapping would keep a second, dead copy resident (~235 MiB on a 0.6B Q4_0 model), and
  // a file truncated under a mapping raises SIGBUS where a read returns an error.
  bool use_mmap = false;
  std::string flash_attention = "auto";  // "auto", "on" or "off"
  std::string kv_cache_type = "f16";     // "f16", "q8_0", "q4_0", ...
  // Loaded for embeddings (Engine::Embed) instead of generation, pooled as the file says.
  bool embeddings = false;
  // A chat template (Jinja) that replaces the file's tokenizer.chat_template: a manifest's
  // TEMPLATE. Empty: the file's own. Load fails when it does not parse or render.
  std::string chat_template;
  SpeculativeConfig speculative;
};

// Token sampling. Defaults and ranges are the reference daemon's (seed 000 config table).
struct SamplingParams {
  float temperature = 0.7f;     // 0 .. 2; 0 means greedy (argmax)
  float top_p = 0.9f;           // 0 .. 1
  int32_t top_k = 40;           // > 0
  float repeat_penalty = 1.1f;  // >= 1
  // OpenAI's penalties, -2 .. 2, over the last 64 tokens: presence subtracts a flat amount
  // from the logit of every token already seen, frequency that amount per occurrence.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint32_t seed = kRandomSeed;  // the sampler's RNG seed; the same seed repeats the output

  static constexpr uint32_t kRandomSeed = 0xFFFFFFFF;  // a fresh random seed per request

  // A GBNF grammar (llama.cpp's) the output must follow, from rule "root"; empty: none. The
  // guard cascade uses it to hold a classifier to its verdict format, structured output and
  // tool calls to their schema.
  std::string grammar;
  // Lazy: the grammar applies only from the first match of a trigger (a regex over the text
  // generated so far, or a token) on; before that the output is free.
  bool grammar_lazy = false;
  std::vector<std::string> grammar_trigger_patterns;
  std::vector<int32_t> grammar_trigger_tokens;
  // Text the grammar consumes before the first sampled token (the template's generation
  // prompt, when the grammar was written to start with it).
  std::string grammar_prefill;
  // Added to a token's logit before sampling (OpenAI logit_bias; -100 bans a token).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // The end-of-generation tokens are never sampled, so generation runs to max_tokens or a
  // stop string (llama-server's ignore_eos; benchmarks use it).
  bool ignore_eos = false;
  // Report each sampled token's log-probability and this many top alternatives (0..20);
  // -1: no log-probabilities.
  int32_t top_logprobs = -1;

  // Greedy decoding, as llama.cpp's reference programs do it.
  static SamplingParams Greedy();

  // InvalidArgument naming the field when a value is out of range (NaN and Inf included).
  Status Validate() const;
};

// Per-request generation limits and options.
struct GenerateOptions {
  int32_t max_tokens = 256;  // 0 returns at once with finish reason "length"
  // This request's own context (prompt and answer), at most the model's; 0: the model's.
  // Ollama's options.num_ctx.
  int32_t context_tokens = 0;
  SamplingParams sampling;
  bool strip_think = true;   // remove <think>...</think> from the returned text
  // This request's cap on tokens drafted per step (speculative decoding); 0: no speculation;
  // -1: the server's draft_max.
  int32_t draft_max = -1;
};

// What to do with a chat whose prompt does not fit the context (the client chooses, per
// request): refuse it with the counts (the default), or drop the oldest whole turns, keeping
// the system prompt and the newest turn (sched/prompt_overflow.h).
enum class ContextOverflow : uint8_t {
  kError,
  kDropOldest,
};

enum class FinishReason : uint8_t {
  kStop,       // the model ended its turn (an end-of-generation token)
  kLength,     // max_tokens, or the context, ran out
  kCancelled,  // the caller asked to stop
};

std::string_view FinishReasonName(FinishReason reason);

// What one generation cost. Times are milliseconds, wall clock.
struct GenerationStats {
  double load_ms = 0;          // model load time (the same on every request)
  int32_t prompt_tokens = 0;   // tokens in the full prompt, cached ones included
  int32_t cached_tokens = 0;   // prompt tokens reused from the KV cache
  double prefill_ms = 0;       // decoding the uncached prompt tokens
  double ttft_ms = 0;          // request start to first generated token
  double decode_ms = 0;        // first to last generated token
  int32_t generated_tokens = 0;
  FinishReason finish_reason = FinishReason::kStop;
  // The scheduler's step counter when this request's prefill began (its first prompt chunk
  // was in that step's decode) and when its first token was sampled: structure, not time,
  // for tests and logs.
  uint64_t prefill_step = 0;
  uint64_t first_token_step = 0;
  // Speculative decoding: tokens drafted and verified, and those of them the target accepted
  // (each accepted one is a generated token that cost no decode step of its own).
  int32_t draft_tokens = 0;
  int32_t accepted_draft_tokens = 0;
  // Request classes: how long the request waited in the queue for a slot, and how many times
  // it was paused (its memory kept) so that a higher class could run.
  double queue_ms = 0;
  int32_t preemptions = 0;
  // ContextOverflow::kDropOldest: the prompt tokens and whole turns dropped from the front of
  // the chat (after the system prompt) so the rest fits the context; 0 and 0 when none were.
  int32_t dropped_tokens = 0;
  int32_t dropped_turns = 0;

  double decode_tokens_per_second() const;
  double prefill_tokens_per_second() const;
};

// One generated token's log-probability under the model (before sampling's truncation), and
// the most likely alternatives at its position.
struct TokenLogprob {
  std::string text;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};

// What a reply in a structured chat holds once parsed: the answer, the reasoning (a think
// block) and the tool calls, each taken out of the generated text.
struct ParsedReply {
  std::string content;
  std::string reasoning_content;
  std::vector<chat::ToolCall> tool_calls;  // ids empty: the front end names them
};

// Turns a structured chat's generated text into a ParsedReply. `partial`: the text may stop
// anywhere (streaming); what cannot be told yet is left out. Text that does not follow the
// format comes back as content. Thread-safety: Parse may run on any thread, concurrently.
class ReplyParser {
 public:
  virtual ~ReplyParser() = default;
  virtual ParsedReply Parse(std::string_view text, bool partial) const = 0;
};

struct Completion {
  std::string text;
  std::vector<TokenId> tokens;  // the generated tokens, end-of-generation token excluded
  GenerationStats stats;
  std::vector<TokenLogprob> logprobs;  // per generated token, when asked for (top_logprobs >= 0)
  std::vector<std::vector<float>> embeddings;  // an embedding job: one unit vector per input
  // The reply's parser when the chat had tools, a schema or thinking; null: `text` is the
  // reply. Shared with the stream's events.
  std::shared_ptr<const ReplyParser> parser;
};

// How a chat reply is shaped: tools it may call, a JSON schema it must follow, thinking.
enum class ToolChoice : uint8_t {
  kAuto,      // the model decides: text or calls
  kNone,      // no calls (the tools are still shown to the model)
  kRequired,  // at least one call, nothing before it
  kNamed,     // exactly a call of `tool_name`
};
// A function the model may call, shown to it by the chat template.
struct ChatTool {
  std::string name;         // non-empty, unique among a chat's tools
  std::string description;  // empty: none
  std::string parameters;   // its arguments' JSON schema (an object) as JSON text; empty: none

  friend bool operator==(const ChatTool&, const ChatTool&) = default;
};
struct ChatFormat {
  std::vector<ChatTool> tools;  // empty: no tools
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_name;   // kNamed
  bool parallel_tool_calls = true;
  std::string json_schema;  // the reply is JSON following this schema (JSON text); empty: free
  bool enable_thinking = false;  // the template's thinking switch; the think block is parsed out

  // Plain chat: no tools, no schema, no thinking (the reply needs no parser).
  bool plain() const { return tools.empty() && json_schema.empty() && !enable_thinking; }
};


}  // namespace llmd::engine

#endif  // LLMD_ENGINE_TYPES_H_
