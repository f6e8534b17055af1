// A manifest's PARAMETER values: typed, checked against the ranges a request has, and a clear
// error for anything else.
#include "models/model_parameters.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd::models {
namespace {

std::string AddError(ModelParameters* p, std::string_view key, std::string_view text) {
  Status s = p->Add(key, text);
  EXPECT_FALSE(s.ok()) << key << " " << text << " was accepted";
  EXPECT_EQ(s.code(), s.ok() ? StatusCode::kOk : StatusCode::kInvalidArgument);
  return s.message();
}

TEST(ModelParameters, EveryKnownKeyTyped) {
  ModelParameters p;
  ASSERT_TRUE(p.Add("num_ctx", "8192").ok());
  ASSERT_TRUE(p.Add("num_predict", "-1").ok());
  ASSERT_TRUE(p.Add("temperature", "0.7").ok());
  ASSERT_TRUE(p.Add("top_p", "0.9").ok());
  ASSERT_TRUE(p.Add("top_k", "40").ok());
  ASSERT_TRUE(p.Add("repeat_penalty", "1.1").ok());
  ASSERT_TRUE(p.Add("presence_penalty", "-0.5").ok());
  ASSERT_TRUE(p.Add("frequency_penalty", "2").ok());
  ASSERT_TRUE(p.Add("seed", "-1").ok());
  ASSERT_TRUE(p.Add("stop", "<|im_end|>").ok());
  ASSERT_TRUE(p.Add("stop", "</s>").ok());

  EXPECT_EQ(p.Integer("num_ctx"), 8192);
  EXPECT_EQ(p.Integer("num_predict"), -1);
  EXPECT_EQ(p.Number("temperature"), 0.7);
  EXPECT_EQ(p.Number("top_p"), 0.9);
  EXPECT_EQ(p.Integer("top_k"), 40);
  EXPECT_EQ(p.Number("top_k"), 40.0);  // an integer reads as a number too
  EXPECT_EQ(p.Number("repeat_penalty"), 1.1);
  EXPECT_EQ(p.Number("presence_penalty"), -0.5);
  EXPECT_EQ(p.Number("frequency_penalty"), 2.0);
  EXPECT_EQ(p.Integer("seed"), -1);
  EXPECT_EQ(p.Strings("stop"), (std::vector<std::string>{"<|im_end|>", "</s>"}));
  EXPECT_FALSE(p.Integer("temperature").has_value());  // a number is not an integer
  EXPECT_FALSE(p.Number("missing").has_value());
  EXPECT_TRUE(p.Has("seed"));
  ASSERT_EQ(p.items().size(), 11u);
  EXPECT_EQ(p.items().front().key, "num_ctx");  // in order
  EXPECT_EQ(KnownParameterKeys().size(), 10u);
}

TEST(ModelParameters, UnknownKeysAreNamed) {
  ModelParameters p;
  EXPECT_EQ(AddError(&p, "mirostat", "0"),
            "unknown PARAMETER 'mirostat'; llmd knows num_ctx, num_predict, temperature, top_p, "
            "top_k, repeat_penalty, presence_penalty, frequency_penalty, seed, stop");
  EXPECT_TRUE(p.empty());
}

TEST(ModelParameters, RangesAndTypes) {
  ModelParameters p;
  EXPECT_EQ(AddError(&p, "temperature", "3"), "PARAMETER temperature must be in 0..2, not 3");
  EXPECT_EQ(AddError(&p, "top_p", "-0.1"), "PARAMETER top_p must be in 0..1, not -0.1");
  EXPECT_EQ(AddError(&p, "repeat_penalty", "0.5"),
            "PARAMETER repeat_penalty must be in 1..10, not 0.5");
  EXPECT_EQ(AddError(&p, "temperature", "warm"),
            "PARAMETER temperature must be a number, not 'warm'");
  EXPECT_EQ(AddError(&p, "temperature", "nan"), "PARAMETER temperature must be in 0..2, not nan");
  EXPECT_NE(AddError(&p, "temperature", "inf").find("must be in 0..2"), std::string::npos);
  EXPECT_EQ(AddError(&p, "temperature", "0.7x"),
            "PARAMETER temperature must be a number, not '0.7x'");
  EXPECT_EQ(AddError(&p, "top_k", "1.5"), "PARAMETER top_k must be an integer, not '1.5'");
  EXPECT_EQ(AddError(&p, "top_k", "0"), "PARAMETER top_k must be in 1..1048576, not 0");
  EXPECT_EQ(AddError(&p, "num_predict", "-3"),
            "PARAMETER num_predict must be in -2..4294967295, not -3");
  EXPECT_EQ(AddError(&p, "num_ctx", "0"), "PARAMETER num_ctx must be in 1..2147483647, not 0");
  EXPECT_NE(AddError(&p, "seed", "99999999999999999999").find("out of range"), std::string::npos);
  EXPECT_EQ(AddError(&p, "seed", ""), "PARAMETER seed must be an integer, not ''");
  EXPECT_TRUE(p.empty());
  // Whole numbers are numbers: "1" is a temperature of 1.
  ASSERT_TRUE(p.Add("temperature", "1").ok());
  EXPECT_EQ(p.Number("temperature"), 1.0);
}

TEST(ModelParameters, OnceButStop) {
  ModelParameters p;
  ASSERT_TRUE(p.Add("temperature", "0.5").ok());
  EXPECT_EQ(AddError(&p, "temperature", "0.6"), "PARAMETER temperature is set twice");
  for (int i = 0; i < static_cast<int>(kMaxStopParameters); ++i) {
    ASSERT_TRUE(p.Add("stop", std::string("s").append(std::to_string(i))).ok());
  }
  EXPECT_EQ(AddError(&p, "stop", "one more"), "PARAMETER stop may be given at most 4 times");
  ModelParameters q;
  EXPECT_EQ(AddError(&q, "stop", ""), "PARAMETER stop must not be empty");
  EXPECT_EQ(AddError(&q, "stop", std::string(kMaxStopParameterBytes + 1, 'x')),
            "PARAMETER stop must be at most 256 bytes");
}

TEST(ModelParameters, TypedValues) {
  ModelParameters p;
  ASSERT_TRUE(p.AddValue("temperature", int64_t{1}).ok());  // an integer for a number key
  ASSERT_TRUE(p.AddValue("top_k", 20.0).ok());              // a whole double for an integer key
  EXPECT_EQ(p.Integer("top_k"), 20);
  EXPECT_FALSE(p.AddValue("num_ctx", 1.5).ok());
  EXPECT_EQ(p.AddValue("top_p", std::string("high")).message(), "PARAMETER top_p must be a number");
  EXPECT_EQ(p.AddValue("stop", int64_t{3}).message(), "PARAMETER stop must be a string");
  EXPECT_EQ(p.AddValue("typical_p", 1.0).message().substr(0, 29), "unknown PARAMETER 'typical_p'");
}

TEST(ModelParameters, OverrideReplacesWholeKeys) {
  ModelParameters base;
  ASSERT_TRUE(base.Add("temperature", "0.2").ok());
  ASSERT_TRUE(base.Add("stop", "a").ok());
  ASSERT_TRUE(base.Add("stop", "b").ok());
  ASSERT_TRUE(base.Add("seed", "7").ok());
  ModelParameters over;
  ASSERT_TRUE(over.Add("stop", "c").ok());
  ASSERT_TRUE(over.Add("top_k", "5").ok());
  ModelParameters merged = base.OverriddenBy(over);
  EXPECT_EQ(merged.Strings("stop"), std::vector<std::string>{"c"});
  EXPECT_EQ(merged.Number("temperature"), 0.2);
  EXPECT_EQ(merged.Integer("seed"), 7);
  EXPECT_EQ(merged.Integer("top_k"), 5);
  EXPECT_EQ(base.OverriddenBy(ModelParameters{}), base);
}

TEST(ModelParameters, FormatsAsAModelfileWrites) {
  EXPECT_EQ(FormatParameterValue(0.7), "0.7");
  EXPECT_EQ(FormatParameterValue(1.0), "1");
  EXPECT_EQ(FormatParameterValue(int64_t{-2}), "-2");
  EXPECT_EQ(FormatParameterValue(std::string("<|im_end|>")), "<|im_end|>");
}

}  // namespace
}  // namespace llmd::models
