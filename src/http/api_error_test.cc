#include "http/api_error.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace llmd::http {
namespace {

struct Case {
  StatusCode code;
  ErrorReason reason;
  int status;
  std::string type, code_name;
  const char* param = nullptr;
};

TEST(OpenAiErrors, EveryCodeAndReasonMapsToItsStatusTypeAndCode) {
  const Case cases[] = {
      {StatusCode::kInvalidArgument, ErrorReason::kNone, 400, "invalid_request_error", "invalid_request"},
      {StatusCode::kInvalidArgument, ErrorReason::kPromptTooLong, 400, "invalid_request_error", "context_length_exceeded"},
      {StatusCode::kInvalidArgument, ErrorReason::kRefusedByGuard, 400, "invalid_request_error", "invalid_request"},
      {StatusCode::kInvalidArgument, ErrorReason::kToolNotOffered, 400, "invalid_request_error", "invalid_request",
       "tool_choice"},
      {StatusCode::kNotFound, ErrorReason::kNone, 404, "invalid_request_error", "not_found"},
      {StatusCode::kNotFound, ErrorReason::kUnknownModel, 404, "invalid_request_error", "model_not_found"},
      {StatusCode::kResourceExhausted, ErrorReason::kRateLimited, 429, "rate_limit_error", "rate_limit_exceeded"},
      {StatusCode::kResourceExhausted, ErrorReason::kBudgetExhausted, 429, "rate_limit_error", "token_budget_exhausted"},
      {StatusCode::kResourceExhausted, ErrorReason::kQueueFull, 503, "server_error", "server_busy"},
      {StatusCode::kUnavailable, ErrorReason::kModelLoading, 503, "server_error", "loading"},
      {StatusCode::kUnavailable, ErrorReason::kShuttingDown, 503, "server_error", "unavailable"},
      {StatusCode::kDeadlineExceeded, ErrorReason::kNone, 504, "server_error", "timeout"},
      {StatusCode::kUnimplemented, ErrorReason::kNone, 501, "server_error", "unsupported"},
      {StatusCode::kCancelled, ErrorReason::kNone, 500, "server_error", "internal_error"},
      {StatusCode::kCorruption, ErrorReason::kBadSessionFile, 500, "server_error", "internal_error"},
      {StatusCode::kInternal, ErrorReason::kNone, 500, "server_error", "internal_error"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(StatusCodeName(c.code)) + "/" + std::string(ErrorReasonName(c.reason)));
    const ApiError e = ApiErrorOf(Status(c.code, "the message", c.reason));
    EXPECT_EQ(e.status, c.status);
    EXPECT_EQ(e.type, c.type);
    EXPECT_EQ(e.code, c.code_name);
    EXPECT_EQ(e.message, "the message");
    EXPECT_EQ(e.param == nullptr ? "null" : std::string(e.param), c.param == nullptr ? "null" : c.param);
    const bool retry = !e.headers.empty() && e.headers[0].first == "Retry-After";
    EXPECT_EQ(retry, c.status == 503 || c.status == 429);
  }
}

// Retry-After is the refusal's own wait in whole seconds, rounded up, and 1 when it names none.
TEST(OpenAiErrors, RetryAfterIsTheRefusalsOwnWaitRoundedUp) {
  const Status spent = ResourceExhaustedError("spent").WithReason(ErrorReason::kBudgetExhausted);
  const std::pair<int64_t, std::string> cases[] = {{0, "1"}, {1, "1"}, {1000, "1"}, {1001, "2"}, {59500, "60"}};
  for (const auto& [ms, seconds] : cases) {
    const ApiError e = ApiErrorOf(spent.WithRetryAfter(ms));
    ASSERT_EQ(e.headers.size(), 1u);
    EXPECT_EQ(e.headers[0], (std::pair<std::string, std::string>{"Retry-After", seconds})) << ms << " ms";
  }
}

TEST(OpenAiErrors, TheMessageTextNeverDecides) {
  EXPECT_EQ(std::string(ApiErrorOf(InvalidArgumentError("prompt too long (9 tokens >= context of 8)")).code),
            "invalid_request");
}

}  // namespace
}  // namespace llmd::http
