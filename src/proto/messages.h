// The native protocol's messages: the reference daemon's LlmRequest / LlmResponse /
// LlmErrorCode (seed 000), variant for variant and field for field, with llmd's additions
// appended after them so seed-era clients keep working unchanged. docs/protocol.md has the
// bytes. Pure values; encode/decode are thread-safe.
#ifndef LLMD_PROTO_MESSAGES_H_
#define LLMD_PROTO_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::proto {

// LlmErrorCode. The first six are the seed's and the only ones sent in answer to the seed's
// three requests; the rest answer appended requests only.
enum class ErrorCode : uint32_t {
  kModelNotLoaded = 0,
  kGenerationFailed = 1,
  kInvalidPrompt = 2,
  kTimeout = 3,
  kInternalError = 4,
  kPermissionDenied = 5,
  // Appended by llmd.
  kBusy = 6,             // connection cap or queue full: retry with backoff
  kRateLimited = 7,      // the peer's request rate is over its limit: retry after a pause
  kContextOverflow = 8,  // prompt does not fit the context
  kUnsupported = 9,      // unknown request variant or feature
  kShuttingDown = 10,    // the daemon is stopping; the request was not completed
  kCancelled = 11,
  kRefused = 12,         // the guard model judged the answer unsafe
};
inline constexpr uint32_t kSeedErrorCodes = 6;
inline constexpr uint32_t kErrorCodeCount = 13;
std::string_view ErrorCodeName(ErrorCode code);

// What a structured generation's output must follow (GenerateParams::constraint). On the
// wire: the kind as one byte, then the text as a postcard String.
struct Constraint {
  enum class Kind : uint8_t {
    kJsonSchema = 0,   // `text` is a JSON schema (JSON text); the reply is JSON that follows it
    kGbnfGrammar = 1,  // `text` is a GBNF grammar (llama.cpp's), from rule "root"
  };
  Kind kind = Kind::kJsonSchema;
  std::string text;
  friend bool operator==(const Constraint&, const Constraint&) = default;
};
inline constexpr uint8_t kConstraintKinds = 2;
// The most bytes of constraint text a request may carry: half a frame, so the limit, not the
// frame's, is what an oversized schema meets, with room left for the prompt.
inline constexpr uint32_t kMaxConstraintBytes = 32 * 1024;

// Sampling and prompt options of the appended requests; unset fields take the daemon's
// configured defaults.
struct GenerateParams {
  std::optional<std::string> system;  // replaces the configured system prompt
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<uint32_t> top_k;
  std::optional<float> repeat_penalty;
  std::optional<uint32_t> seed;
  std::optional<std::string> model;  // a loaded model's name (Models); default: the first
  std::optional<bool> guard;         // run the guard cascade; default: guard_model is set
  std::optional<Constraint> constraint;  // structured output; default: free text
  // Speculative decoding: at most this many tokens drafted per step (the server's draft_max
  // caps it); Some(0): none for this request; default: the server's draft_max.
  std::optional<uint32_t> draft_max;
  // Who waits on the answer: 0 interactive, 1 normal, 2 background (common/request_class.h);
  // default: the peer's configured class. Never above the peer's configured ceiling.
  std::optional<uint8_t> request_class;
  // The first token is wanted within this many ms: refused at once with the expected wait
  // (Busy) when the scheduler cannot meet it; default: no deadline.
  std::optional<uint32_t> first_token_deadline_ms;
  // A Chat whose prompt does not fit the context: 0 error (the default: refused with the
  // counts), 1 drop_oldest (the oldest whole turns of the session are dropped, the system
  // prompt and this turn kept; Done's stats say how many). kOverflowPolicies and above: refused.
  std::optional<uint8_t> overflow;
  friend bool operator==(const GenerateParams&, const GenerateParams&) = default;
};

inline constexpr uint8_t kOverflowError = 0;
inline constexpr uint8_t kOverflowDropOldest = 1;
inline constexpr uint8_t kOverflowPolicies = 2;

// LlmRequest.
struct Request {
  enum class Type : uint32_t {
    kGenerate = 0,        // seed: Generate { prompt: String, max_tokens: Option<u32> }
    kHealthCheck = 1,     // seed
    kShutdown = 2,        // seed; root only
    kGenerateStream = 3,  // GenerateStream { prompt, max_tokens: Option<u32>, params }
    kChat = 4,            // Chat { session: String, prompt (the message), max_tokens, params }
    kEndSession = 5,      // EndSession { session: String }
    kStats = 6,           // Stats
    kModels = 7,          // Models
    kSaveSession = 8,     // SaveSession { session: String }: to session_dir
    kRestoreSession = 9,  // RestoreSession { session: String }: from session_dir
    kDeleteSession = 10,  // DeleteSession { session: String }: the saved file
    // Model management, admins only (root, admin_uids, admin_gids):
    kPullModel = 11,      // PullModel { source: String }: PullProgress frames, then Ack
    kCopyModel = 12,      // CopyModel { source: String, destination: String }: Ack
    kDeleteModel = 13,    // DeleteModel { model: String }: Ack
    kRunningModels = 14,  // RunningModels: Models with the loaded ones (any allowed peer)
  };
  Type type = Type::kHealthCheck;
  std::string prompt;
  std::optional<uint32_t> max_tokens;
  GenerateParams params;  // kGenerateStream, kChat
  std::string session;    // kChat and the session requests
  std::string model;        // kPullModel (the source), kCopyModel (the source), kDeleteModel
  std::string destination;  // kCopyModel

  bool is_seed_request() const { return type <= Type::kShutdown; }
  friend bool operator==(const Request&, const Request&) = default;
};

enum class FinishReason : uint32_t { kStop = 0, kLength = 1, kCancelled = 2 };

// Per-request statistics, sent at the end of a stream.
struct Stats {
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  float prefill_ms = 0;
  float ttft_ms = 0;
  float decode_ms = 0;
  FinishReason finish_reason = FinishReason::kStop;
  float guard_ms = 0;  // the guard's classification, 0 without the cascade
  // Appended: speculative decoding's drafted tokens, and those of them the model accepted;
  // 0 from an older llmd (nothing follows `guard_ms` then).
  uint32_t draft_tokens = 0;
  uint32_t accepted_draft_tokens = 0;
  // Appended: the prompt tokens and whole turns overflow drop_oldest dropped to fit the
  // context; 0 from an older llmd (nothing follows `accepted_draft_tokens` then).
  uint32_t dropped_tokens = 0;
  uint32_t dropped_turns = 0;
  friend bool operator==(const Stats&, const Stats&) = default;
};

// The default model's memory, MiB (an llmd extension appended to ServerStats).
struct MemoryStats {
  uint32_t weights_resident_mib = 0;
  uint32_t kv_reserved_mib = 0;
  uint32_t kv_resident_mib = 0;
  uint32_t compute_mib = 0;           // scratch and outputs; 0 after an idle release
  uint32_t checkpoints_mib = 0;       // recurrent-state checkpoints (hybrid models)
  uint32_t process_resident_mib = 0;  // the whole daemon (VmRSS)
  uint32_t working_memory_releases = 0;
  friend bool operator==(const MemoryStats&, const MemoryStats&) = default;
};

// One client's counters since the daemon started (an llmd extension appended to ServerStats):
// the requests of one peer UID in one request class that reached a model.
struct ClientStats {
  // The peer's UID in decimal; "other" for every UID past the first 16 seen, "unknown" for
  // peers of no known UID (unidentified TCP peers). At most kMaxClientUidBytes.
  std::string uid;
  uint8_t request_class = 1;  // 0 interactive, 1 normal, 2 background
  uint32_t requests = 0;      // refused ones included
  uint32_t refused_budget = 0;      // its UID's token budget for the class was spent
  uint32_t refused_queue_full = 0;  // its class's queue was full
  uint32_t refused_busy = 0;        // any other lack of room (the memory floor)
  uint32_t refused_deadline = 0;    // its first-token deadline could not be met
  float queue_wait_ms = 0;  // mean, over the requests that ran and were not cancelled; 0: none
  float ttft_ms = 0;        // mean, over those that generated a token; 0: none
  uint32_t prompt_tokens = 0;  // cached ones included
  uint32_t cached_tokens = 0;
  uint32_t generated_tokens = 0;
  uint32_t preemptions = 0;  // times its requests were paused for a higher class
  friend bool operator==(const ClientStats&, const ClientStats&) = default;
};
inline constexpr uint32_t kMaxClientUidBytes = 16;

// Counters since the daemon started (Stats).
struct ServerStats {
  uint32_t requests = 0;          // generations finished
  uint32_t generated_tokens = 0;
  float ttft_p50_ms = 0;          // over the last 1000 requests
  float ttft_p95_ms = 0;
  float prefill_tokens_per_second = 0;
  float decode_tokens_per_second = 0;
  float cached_token_ratio = 0;   // cached prompt tokens / prompt tokens
  uint32_t active = 0;            // generations running now
  uint32_t queued = 0;
  uint32_t sessions = 0;
  // Appended: absent from an older llmd (nothing follows `sessions` then).
  std::optional<MemoryStats> memory;
  // Appended after memory: the default model's drafted and accepted tokens (speculative
  // decoding), all requests; 0 from an older llmd (nothing follows `memory` then).
  uint32_t draft_tokens = 0;
  uint32_t accepted_draft_tokens = 0;
  // Appended after the draft counters: the per-client rows, by UID then class. Written only
  // when there are any; a reply that ends after accepted_draft_tokens (an older llmd's, or
  // one with no client yet) has none.
  std::vector<ClientStats> clients;
  friend bool operator==(const ServerStats&, const ServerStats&) = default;
};

// LlmResponse.
struct Response {
  enum class Type : uint32_t {
    kGenerated = 0,  // seed: Generated { text: String, tokens_generated: u32 }
    kError = 1,      // seed: Error { code: LlmErrorCode, message: String }
    kHealth = 2,     // seed: Health { model_loaded: bool, npu_core: u8, kv_cache_usage: f32 }
    kToken = 3,      // Token { text: String }: the next piece of a stream
    kDone = 4,       // Done { tokens_generated: u32, stats: Stats }: a stream's last frame
    kAck = 5,        // Ack: the request was carried out (EndSession)
    kServerStats = 6,  // ServerStats { ... } (Stats)
    kModels = 7,     // Models { names: Vec<String> }
    kPullProgress = 8,  // PullProgress { status: String, completed: u64, total: u64 }: a pull's progress
  };
  Type type = Type::kError;
  std::string text;               // kGenerated, kToken; the message for kError
  uint32_t tokens_generated = 0;  // kGenerated, kDone
  ErrorCode code = ErrorCode::kInternalError;
  bool model_loaded = false;
  uint8_t npu_core = 0;
  float kv_cache_usage = 0;
  Stats stats;  // kDone
  ServerStats server_stats;         // kServerStats
  std::vector<std::string> models;  // kModels
  // kPullProgress: where a pull is ("pulling manifest", "pulling <file>"), its bytes so far and
  // the file's size (0: not known yet).
  std::string pull_status;
  uint64_t pull_completed = 0;
  uint64_t pull_total = 0;

  static Response Error(ErrorCode code, std::string message);
  friend bool operator==(const Response&, const Response&) = default;
};

// Postcard payloads (no frame header). Decoding rejects unknown variants ("unsupported
// request variant 9"), out-of-range enum values (an unknown constraint kind among them),
// invalid UTF-8, a constraint over kMaxConstraintBytes, truncation and trailing bytes.
std::string EncodeRequest(const Request& r);
Result<Request> DecodeRequest(std::string_view payload);
std::string EncodeResponse(const Response& r);
Result<Response> DecodeResponse(std::string_view payload);

}  // namespace llmd::proto

#endif  // LLMD_PROTO_MESSAGES_H_
