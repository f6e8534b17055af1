#include "daemon/native_errors.h"

#include <gtest/gtest.h>

namespace llmd::daemon {
namespace {

using proto::ErrorCode;

struct Case {
  StatusCode code;
  ErrorReason reason;
  ErrorCode seed, appended;
};

// Every (code, reason) a protocol must tell apart, and what each kind of request gets.
TEST(NativeErrors, EveryCodeAndReasonMapsToItsWireCodes) {
  const Case cases[] = {
      {StatusCode::kInvalidArgument, ErrorReason::kNone, ErrorCode::kInvalidPrompt, ErrorCode::kInvalidPrompt},
      {StatusCode::kInvalidArgument, ErrorReason::kPromptTooLong, ErrorCode::kInvalidPrompt, ErrorCode::kContextOverflow},
      {StatusCode::kInvalidArgument, ErrorReason::kRefusedByGuard, ErrorCode::kGenerationFailed, ErrorCode::kRefused},
      {StatusCode::kNotFound, ErrorReason::kNone, ErrorCode::kInvalidPrompt, ErrorCode::kInvalidPrompt},
      {StatusCode::kResourceExhausted, ErrorReason::kQueueFull, ErrorCode::kInternalError, ErrorCode::kBusy},
      {StatusCode::kResourceExhausted, ErrorReason::kRateLimited, ErrorCode::kInternalError, ErrorCode::kRateLimited},
      {StatusCode::kResourceExhausted, ErrorReason::kBudgetExhausted, ErrorCode::kInternalError, ErrorCode::kBusy},
      {StatusCode::kResourceExhausted, ErrorReason::kNone, ErrorCode::kInternalError, ErrorCode::kBusy},
      {StatusCode::kUnavailable, ErrorReason::kNone, ErrorCode::kModelNotLoaded, ErrorCode::kModelNotLoaded},
      {StatusCode::kUnavailable, ErrorReason::kModelLoading, ErrorCode::kModelNotLoaded, ErrorCode::kModelNotLoaded},
      {StatusCode::kUnavailable, ErrorReason::kShuttingDown, ErrorCode::kGenerationFailed, ErrorCode::kShuttingDown},
      {StatusCode::kUnavailable, ErrorReason::kSessionNotSaved, ErrorCode::kInternalError, ErrorCode::kInternalError},
      {StatusCode::kDeadlineExceeded, ErrorReason::kNone, ErrorCode::kTimeout, ErrorCode::kTimeout},
      {StatusCode::kCancelled, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kCancelled},
      {StatusCode::kUnimplemented, ErrorReason::kNone, ErrorCode::kInternalError, ErrorCode::kUnsupported},
      {StatusCode::kCorruption, ErrorReason::kBadSessionFile, ErrorCode::kGenerationFailed, ErrorCode::kInvalidPrompt},
      {StatusCode::kCorruption, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kGenerationFailed},
      {StatusCode::kInternal, ErrorReason::kNone, ErrorCode::kGenerationFailed, ErrorCode::kGenerationFailed},
  };
  for (const Case& c : cases) {
    const Status s(c.code, "any message", c.reason);
    SCOPED_TRACE(std::string(StatusCodeName(c.code)) + "/" + std::string(ErrorReasonName(c.reason)));
    EXPECT_EQ(WireCode(s, true), c.seed);
    EXPECT_EQ(WireCode(s, false), c.appended);
    EXPECT_LT(static_cast<uint32_t>(WireCode(s, true)), proto::kSeedErrorCodes) << "a seed request got a new code";
  }
}

// The message is never read: the same words under another reason map by the reason.
TEST(NativeErrors, TheMessageTextNeverDecides) {
  EXPECT_EQ(WireCode(InvalidArgumentError("prompt too long (9 tokens >= context of 8)"), false),
            ErrorCode::kInvalidPrompt);
  EXPECT_EQ(WireCode(ResourceExhaustedError("rate limited, retry after 5 ms"), false), ErrorCode::kBusy);
  EXPECT_EQ(WireCode(UnavailableError("the daemon is shutting down"), false), ErrorCode::kModelNotLoaded);
}

}  // namespace
}  // namespace llmd::daemon
