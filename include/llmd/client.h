// llmd::LlmClient: the C++ client for the llmd daemon's native protocol (docs/protocol.md).
//
// Like the reference daemon's client, it opens one connection per request, so a client
// object holds no socket and can be shared between threads freely (every method is
// thread-safe). Errors are typed so a caller can choose a fallback without parsing strings:
//   - ConnectionFailed: no daemon at the socket path (not running, wrong path, refused);
//   - Timeout: no frame from the daemon within the timeout (default 10 s);
//   - ServerError: the daemon answered with an error code (see server_code);
//   - IoError: the connection broke or the daemon sent something unreadable.
#ifndef LLMD_CLIENT_H_
#define LLMD_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd {

struct ClientError {
  enum class Kind { kConnectionFailed, kTimeout, kServerError, kIoError };
  Kind kind = Kind::kIoError;
  uint32_t server_code = 0;  // the LlmErrorCode, for kServerError
  std::string message;

  // "ServerError(InvalidPrompt): prompt is empty", "ConnectionFailed: ...".
  std::string ToString() const;
};

template <typename T>
using ClientResult = Result<T, ClientError>;

// What a Chat turn does when the session's history and the new message do not fit the model's
// context (docs/protocol.md, "overflow"): kError refuses it (ServerError(ContextOverflow), the
// counts in the message); kDropOldest drops the session's oldest whole turns (never the system
// prompt or this turn), and the Generation's dropped_* say what went.
enum class Overflow { kError, kDropOldest };

// Options of a streamed generation; unset fields take the daemon's defaults.
struct GenerateOptions {
  std::optional<uint32_t> max_tokens;
  std::optional<std::string> system;
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<uint32_t> top_k;
  std::optional<float> repeat_penalty;
  std::optional<uint32_t> seed;
  std::optional<std::string> model;  // a loaded model's name (Models); default: the first
  std::optional<bool> guard;         // run the guard cascade (default: when llmd has a guard)
  // Speculative decoding: at most this many tokens drafted per step (llmd's draft_max caps it);
  // 0: none for this request; default: llmd's draft_max.
  std::optional<uint32_t> draft_max;
  // Applies to Chat (a GenerateStream has no turns to drop: too long is refused either way);
  // default: kError.
  std::optional<Overflow> overflow;
};

struct Generation {
  std::string text;
  uint32_t tokens_generated = 0;
  // Streams only:
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  float prefill_ms = 0;
  float ttft_ms = 0;
  float decode_ms = 0;
  float guard_ms = 0;         // the guard cascade's time, 0 without it
  std::string finish_reason;  // "stop", "length" or "cancelled"
  uint32_t draft_tokens = 0;           // speculative decoding: tokens drafted and verified
  uint32_t accepted_draft_tokens = 0;  // ... and those of them the model accepted
  uint32_t dropped_tokens = 0;  // Overflow::kDropOldest: the prompt tokens dropped to fit
  uint32_t dropped_turns = 0;   // ... and the whole turns they were
};

// Counters since the daemon started.
struct ServerStats {
  uint32_t requests = 0;
  uint32_t generated_tokens = 0;
  float ttft_p50_ms = 0;
  float ttft_p95_ms = 0;
  float prefill_tokens_per_second = 0;
  float decode_tokens_per_second = 0;
  float cached_token_ratio = 0;
  uint32_t active = 0;
  uint32_t queued = 0;
  uint32_t sessions = 0;
  // The default model's memory in MiB; absent from a daemon that does not report it.
  struct Memory {
    uint32_t weights_resident_mib = 0;
    uint32_t kv_reserved_mib = 0;
    uint32_t kv_resident_mib = 0;  // KV pages are committed as tokens use them
    uint32_t compute_mib = 0;      // 0 after an idle release
    uint32_t checkpoints_mib = 0;
    uint32_t process_resident_mib = 0;
    uint32_t working_memory_releases = 0;  // idle releases since start
  };
  std::optional<Memory> memory;
  // The default model's speculative decoding, all requests: tokens drafted, and accepted.
  uint32_t draft_tokens = 0;
  uint32_t accepted_draft_tokens = 0;
  // Per peer UID and request class, all models: what each client got. Empty from a daemon
  // that does not report it (or before any request).
  struct Client {
    std::string uid;            // decimal; "other" past the first 16 UIDs; "unknown": no known UID
    std::string request_class;  // "interactive", "normal" or "background"
    uint32_t requests = 0;      // refused ones included
    uint32_t refused_budget = 0, refused_queue_full = 0, refused_busy = 0, refused_deadline = 0;
    float queue_wait_ms = 0;    // mean; 0 when none ran
    float ttft_ms = 0;          // mean; 0 when none generated a token
    uint32_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
    uint32_t preemptions = 0;   // times its requests were paused for a higher class
    uint32_t refused() const { return refused_budget + refused_queue_full + refused_busy + refused_deadline; }
  };
  std::vector<Client> clients;
};

struct Health {
  bool model_loaded = false;
  uint8_t npu_core = 0;
  float kv_cache_usage = 0;
};

class LlmClient {
 public:
  explicit LlmClient(std::string socket_path,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // The seed's Generate: the whole reply at once.
  ClientResult<Generation> Generate(std::string_view prompt,
                                    std::optional<uint32_t> max_tokens = std::nullopt) const;

  // Streams the reply: `on_text` gets each piece of text (whole UTF-8 characters) as it is
  // generated; returning false closes the connection, which cancels the generation. The
  // returned Generation has the whole text and the daemon's statistics.
  ClientResult<Generation> GenerateStream(std::string_view prompt, const GenerateOptions& options,
                                          const std::function<bool(std::string_view)>& on_text) const;

  // One turn of a chat session kept by the daemon (created on first use): only the new
  // message is sent, and the daemon reuses the cached tokens of the previous turns.
  ClientResult<Generation> Chat(std::string_view session, std::string_view message,
                                const GenerateOptions& options,
                                const std::function<bool(std::string_view)>& on_text) const;
  // Forgets a chat session. ServerError(InvalidPrompt) if there is none.
  std::optional<ClientError> EndSession(std::string_view session) const;

  // Saves a chat session to the daemon's session_dir, restores it (after a restart, say), or
  // deletes the saved file. nullopt on success.
  std::optional<ClientError> SaveSession(std::string_view session) const;
  std::optional<ClientError> RestoreSession(std::string_view session) const;
  std::optional<ClientError> DeleteSession(std::string_view session) const;

  ClientResult<ServerStats> Stats() const;
  // Every model that can be served, loaded or not; RunningModels: the loaded ones.
  ClientResult<std::vector<std::string>> Models() const;
  ClientResult<std::vector<std::string>> RunningModels() const;

  // Model management, for root and the daemon's admin_uids/admin_gids (others get
  // ServerError(PermissionDenied) saying who may). PullModel fetches an https URL or
  // hf.co/owner/repo[:quant] into models_dir; `on_progress` sees each progress frame (the last
  // one's status is "success: model NAME") and may return false to stop (the daemon keeps the
  // partial file). nullopt on success.
  struct PullProgress {
    std::string status;  // "pulling manifest", "pulling FILE", "success: model NAME"
    uint64_t completed = 0;
    uint64_t total = 0;  // 0: not known yet
  };
  std::optional<ClientError> PullModel(std::string_view source,
                                       const std::function<bool(const PullProgress&)>& on_progress) const;
  std::optional<ClientError> CopyModel(std::string_view source, std::string_view destination) const;
  std::optional<ClientError> DeleteModel(std::string_view model) const;

  ClientResult<Health> HealthCheck() const;

  // Asks the daemon to stop (root only). nullopt when the daemon accepted.
  std::optional<ClientError> Shutdown() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  std::string socket_path_;
  std::chrono::milliseconds timeout_;
};

}  // namespace llmd

#endif  // LLMD_CLIENT_H_
