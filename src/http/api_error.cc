#include "http/api_error.h"

#include <string>

namespace llmd::http {
namespace {

struct Row {
  StatusCode code;
  ErrorReason reason;  // kNone matches a code's every other reason
  int status;
  const char* type;
  const char* code_name;
  bool retry_after;    // answer Retry-After: the error's own retry_after_ms, else 1
  const char* param = nullptr;  // OpenAI's `param`: the request field at fault
};

// First match wins: rows with a reason come before their code's catch-all row.
constexpr Row kTable[] = {
    {StatusCode::kInvalidArgument, ErrorReason::kPromptTooLong, 400, "invalid_request_error", "context_length_exceeded", false},
    {StatusCode::kInvalidArgument, ErrorReason::kToolNotOffered, 400, "invalid_request_error", "invalid_request", false,
     "tool_choice"},
    {StatusCode::kInvalidArgument, ErrorReason::kNone, 400, "invalid_request_error", "invalid_request", false},
    {StatusCode::kNotFound, ErrorReason::kUnknownModel, 404, "invalid_request_error", "model_not_found", false},
    {StatusCode::kNotFound, ErrorReason::kNone, 404, "invalid_request_error", "not_found", false},
    {StatusCode::kResourceExhausted, ErrorReason::kRateLimited, 429, "rate_limit_error", "rate_limit_exceeded", true},
    {StatusCode::kResourceExhausted, ErrorReason::kBudgetExhausted, 429, "rate_limit_error", "token_budget_exhausted",
     true},
    {StatusCode::kResourceExhausted, ErrorReason::kDeadlineUnmeetable, 503, "server_error", "deadline_unmeetable", true},
    {StatusCode::kResourceExhausted, ErrorReason::kNone, 503, "server_error", "server_busy", true},
    {StatusCode::kUnavailable, ErrorReason::kModelLoading, 503, "server_error", "loading", true},
    {StatusCode::kUnavailable, ErrorReason::kNone, 503, "server_error", "unavailable", true},
    {StatusCode::kDeadlineExceeded, ErrorReason::kNone, 504, "server_error", "timeout", false},
    {StatusCode::kUnimplemented, ErrorReason::kNone, 501, "server_error", "unsupported", false},
};

// Whole seconds, rounded up: a client that waits as long as it is told finds the refusal gone.
std::string RetryAfterSeconds(const Status& s) {
  if (s.retry_after_ms() <= 0) return "1";
  return std::to_string((s.retry_after_ms() + 999) / 1000);
}

}  // namespace

ApiError ApiErrorOf(const Status& s) {
  for (const Row& row : kTable) {
    if (row.code == s.code() && (row.reason == ErrorReason::kNone || row.reason == s.reason())) {
      Headers headers;
      if (row.retry_after) headers.emplace_back("Retry-After", RetryAfterSeconds(s));
      return {row.status, row.type, row.code_name, s.message(), std::move(headers), row.param};
    }
  }
  return {500, "server_error", "internal_error", s.message(), {}};
}

}  // namespace llmd::http
