#include "llmd/status.h"

#include <gtest/gtest.h>

#include "llmd/result.h"

namespace llmd {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgumentError("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  LLMD_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

Status CheckEven(int v) {
  LLMD_RETURN_IF_ERROR(Half(v).error());
  return Status::Ok();
}

TEST(Status, OkIsCheapAndPrintsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s = NotFoundError("no such model");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "not_found: no such model");
  EXPECT_EQ(s.WithContext("model.gguf").message(), "model.gguf: no such model");
  EXPECT_TRUE(Status().WithContext("x").ok());
}

// A refusal's retry-after travels with it through the context and reason it picks up.
TEST(Status, RetryAfterSurvivesContextAndReason) {
  const Status s = ResourceExhaustedError("budget spent").WithRetryAfter(2500);
  EXPECT_EQ(s.retry_after_ms(), 2500);
  EXPECT_EQ(s.WithContext("guard").retry_after_ms(), 2500);
  EXPECT_EQ(s.WithReason(ErrorReason::kBudgetExhausted).retry_after_ms(), 2500);
  EXPECT_EQ(ResourceExhaustedError("budget spent").retry_after_ms(), 0) << "none unless said";
  EXPECT_NE(s, ResourceExhaustedError("budget spent"));
}

TEST(Result, PropagatesValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).error().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(3).message(), "odd");
}

TEST(ResultDeathTest, ValueOnErrorAborts) {
  Result<int> r = InternalError("x");
  EXPECT_DEATH((void)r.value(), "Result::value");
}

}  // namespace
}  // namespace llmd
