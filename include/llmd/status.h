// llmd::Status: the outcome of an operation, an error code and a human-readable message.
//
// Errors in llmd are values, not exceptions: most come from untrusted input (bad frames, bad
// files, bad prompts) and must travel to wire codes, HTTP statuses and C return codes.
// An OK status carries no message and costs one enum compare.
//
// Thread-safety: a value type; distinct objects may be used from different threads.
#ifndef LLMD_STATUS_H_
#define LLMD_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace llmd {

// A small closed set of codes; each maps 1:1 to a wire error code and an HTTP status.
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,    // bad request or prompt (HTTP 400)
  kNotFound,           // missing model, session or file (404)
  kResourceExhausted,  // queue, context or memory full (429/503)
  kUnavailable,        // model loading or shutting down (503)
  kCancelled,          // the client went away or asked to stop
  kDeadlineExceeded,   // a deadline passed (504)
  kCorruption,         // a malformed or unsupported model or state file
  kUnimplemented,      // a feature this build does not have (501)
  kInternal,           // a bug or an engine failure (500)
};

// Returns a stable lower_snake name for `code`, e.g. "invalid_argument".
std::string_view StatusCodeName(StatusCode code);

// Why an error happened, where a protocol must tell cases of one code apart (a context
// overflow from another bad prompt, a rate limit from a full queue). Each protocol maps
// (code, reason) to its own codes in one table; nothing inspects message text.
enum class ErrorReason : uint8_t {
  kNone = 0,
  kPromptTooLong,      // the prompt does not fit the context (InvalidArgument)
  kRateLimited,        // the caller's token bucket is empty (ResourceExhausted)
  kQueueFull,          // the request queue or the connection cap is full (ResourceExhausted)
  kRefusedByGuard,     // the guard model judged the answer unsafe (InvalidArgument)
  kSessionNotSaved,    // a session file could not be written (Unavailable)
  kBadSessionFile,     // a session file is malformed, foreign or old (Corruption)
  kShuttingDown,       // the daemon is stopping (Unavailable)
  kModelLoading,       // the models are still loading (Unavailable)
  kUnknownModel,       // a request named a model that is not loaded (NotFound)
  kToolNotOffered,     // tool_choice asks for a tool the request's tools lack (InvalidArgument)
  kDeadlineUnmeetable,  // the scheduler expects the first token after the request's deadline (ResourceExhausted)
  kBudgetExhausted,    // the peer's token budget for its class is spent; see retry_after_ms (ResourceExhausted)
};

// A stable lower_snake name for `reason`, e.g. "prompt_too_long"; "" for kNone.
std::string_view ErrorReasonName(ErrorReason reason);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, ErrorReason reason = ErrorReason::kNone)
      : code_(code), reason_(reason), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  ErrorReason reason() const { return reason_; }
  // The same error with `reason` attached.
  Status WithReason(ErrorReason reason) const {
    Status s = *this;
    s.reason_ = reason;
    return s;
  }
  const std::string& message() const { return message_; }
  // A refusal that knows when it will pass (an exhausted token budget) says so: HTTP sends it
  // as Retry-After. Milliseconds from when the error was made; 0: it does not say.
  int64_t retry_after_ms() const { return retry_after_ms_; }
  Status WithRetryAfter(int64_t ms) const {
    Status s = *this;
    s.retry_after_ms_ = ms;
    return s;
  }

  // "invalid_argument: prompt is empty", or "ok".
  std::string ToString() const;

  // Prepends context to the message: "loading model.gguf: <message>". OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.reason_ == b.reason_ && a.message_ == b.message_ &&
           a.retry_after_ms_ == b.retry_after_ms_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  ErrorReason reason_ = ErrorReason::kNone;
  std::string message_;
  int64_t retry_after_ms_ = 0;
};

inline Status InvalidArgumentError(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFoundError(std::string msg) {
  return Status(StatusCode::kNotFound, std::move(msg));
}
inline Status ResourceExhaustedError(std::string msg) {
  return Status(StatusCode::kResourceExhausted, std::move(msg));
}
inline Status UnavailableError(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status CancelledError(std::string msg) {
  return Status(StatusCode::kCancelled, std::move(msg));
}
inline Status DeadlineExceededError(std::string msg) {
  return Status(StatusCode::kDeadlineExceeded, std::move(msg));
}
inline Status CorruptionError(std::string msg) {
  return Status(StatusCode::kCorruption, std::move(msg));
}
inline Status UnimplementedError(std::string msg) {
  return Status(StatusCode::kUnimplemented, std::move(msg));
}
inline Status InternalError(std::string msg) {
  return Status(StatusCode::kInternal, std::move(msg));
}

}  // namespace llmd

// Returns early from the enclosing function if `expr` yields a non-OK Status.
#define LLMD_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::llmd::Status llmd_status_ = (expr);           \
    if (!llmd_status_.ok()) return llmd_status_;    \
  } while (0)

#endif  // LLMD_STATUS_H_
