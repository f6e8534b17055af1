#include "daemon/native_errors.h"

namespace llmd::daemon {
namespace {

using proto::ErrorCode;

struct Row {
  StatusCode code;
  ErrorReason reason;  // kNone matches a code's every other reason
  ErrorCode seed;      // for seed-era requests: codes 0..5 only
  ErrorCode appended;  // for llmd's appended requests
};

// First match wins: rows with a reason come before their code's catch-all row.
constexpr Row kTable[] = {
    {StatusCode::kInvalidArgument, ErrorReason::kRefusedByGuard, ErrorCode::kGenerationFailed, ErrorCode::kRefused},
    {StatusCode::kInvalidArgument, ErrorReason::kPromptTooLong, ErrorCode::kInvalidPrompt, ErrorCode::kContextOverflow},
    {StatusCode::kInvalidArgument, ErrorReason::kNone, ErrorCode::kInvalidPrompt, ErrorCode::kInvalidPrompt},
    {StatusCode::kNotFound, ErrorReason::kNone, ErrorCode::kInvalidPrompt, ErrorCode::kInvalidPrompt},
    {StatusCode::kResourceExhausted, ErrorReason::kRateLimited, ErrorCode::kInternalError, ErrorCode::kRateLimited},
    // Busy, not RateLimited: the message says when to retry ("retry after N s").
    {StatusCode::kResourceExhausted, ErrorReason::kBudgetExhausted, ErrorCode::kInternalError, ErrorCode::kBusy},
    {StatusCode::kResourceExhausted, ErrorReason::kDeadlineUnmeetable, ErrorCode::kInternalError, ErrorCode::kBusy},
    {StatusCode::kResourceExhausted, ErrorReason::kNone, ErrorCode::kInternalError, ErrorCode::kBusy},
    {StatusCode::kUnavailable, ErrorReason::kSessionNotSaved, ErrorCode::kInternalError, ErrorCode::kInternalError},
    {StatusCode::kUnavailable, ErrorReason::kShuttingDown, ErrorCode::kGenerationFailed, ErrorCode::kShuttingDown},
    {StatusCode::kUnavailable, ErrorReason::kNone, ErrorCode::kModelNotLoaded, ErrorCode::kModelNotLoaded},
    {StatusCode::kDeadlineExceeded, ErrorReason::kNone, ErrorCode::kTimeout, ErrorCode::kTimeout},
    {StatusCode::kCancelled, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kCancelled},
    {StatusCode::kUnimplemented, ErrorReason::kNone, ErrorCode::kInternalError, ErrorCode::kUnsupported},
    {StatusCode::kCorruption, ErrorReason::kBadSessionFile, ErrorCode::kGenerationFailed, ErrorCode::kInvalidPrompt},
    {StatusCode::kCorruption, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kGenerationFailed},
    {StatusCode::kInternal, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kGenerationFailed},
};

}  // namespace

proto::ErrorCode WireCode(const Status& s, bool seed) {
  for (const Row& row : kTable) {
    if (row.code == s.code() && (row.reason == ErrorReason::kNone || row.reason == s.reason())) {
      return seed ? row.seed : row.appended;
    }
  }
  return ErrorCode::kInternalError;
}

}  // namespace llmd::daemon
