#include "llmd/status.h"

namespace llmd {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kDeadlineExceeded: return "deadline_exceeded";
    case StatusCode::kCorruption: return "corruption";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string_view ErrorReasonName(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kNone: return "";
    case ErrorReason::kPromptTooLong: return "prompt_too_long";
    case ErrorReason::kRateLimited: return "rate_limited";
    case ErrorReason::kQueueFull: return "queue_full";
    case ErrorReason::kRefusedByGuard: return "refused_by_guard";
    case ErrorReason::kSessionNotSaved: return "session_not_saved";
    case ErrorReason::kBadSessionFile: return "bad_session_file";
    case ErrorReason::kShuttingDown: return "shutting_down";
    case ErrorReason::kModelLoading: return "model_loading";
    case ErrorReason::kUnknownModel: return "unknown_model";
    case ErrorReason::kToolNotOffered: return "tool_not_offered";
    case ErrorReason::kDeadlineUnmeetable: return "deadline_unmeetable";
    case ErrorReason::kBudgetExhausted: return "budget_exhausted";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg), reason_).WithRetryAfter(retry_after_ms_);
}

}  // namespace llmd
