#include "http/openai_request.h"

#include <gtest/gtest.h>

namespace llmd::http {
namespace {

TEST(OpenAiRequest, ParsesAChatRequestWithEveryField) {
  auto r = ParseChatRequest(R"({"model":"m","messages":[{"role":"developer","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
      "max_tokens":7,"temperature":0.5,"top_p":0.8,"seed":42,"stop":["a","b"],"stream":true,
      "stream_options":{"include_usage":true},"chat_template_kwargs":{"enable_thinking":true},
      "user":"ignored","n":1,"presence_penalty":0.1,"frequency_penalty":-0.5})");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->messages.size(), 2u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "hi there");
  EXPECT_EQ(*r->model, "m");
  EXPECT_EQ(*r->max_tokens, 7u);
  EXPECT_FLOAT_EQ(*r->temperature, 0.5f);
  EXPECT_EQ(*r->seed, 42u);
  EXPECT_FLOAT_EQ(*r->presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(*r->frequency_penalty, -0.5f);
  EXPECT_EQ(r->stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r->stream && r->include_usage && r->enable_thinking);
}

TEST(OpenAiRequest, NullMeansAbsentAndThinkingDefaultsOff) {
  auto r = ParseChatRequest(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":null,"stop":null})");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(r->max_tokens.has_value());
  EXPECT_FALSE(r->enable_thinking);
  EXPECT_FALSE(r->stream);
}

TEST(OpenAiRequest, RejectsBadBodiesWithTheFieldNamed) {
  struct Case {
    const char* body;
    const char* says;
  } cases[] = {
      {"", "not valid JSON"},
      {"{\"messages\":", "not valid JSON"},
      {"[1,2]", "JSON object"},
      {"{}", "'messages' is required"},
      {R"({"messages":[]})", "non-empty array"},
      {R"({"messages":"hi"})", "non-empty array"},
      {R"({"messages":[{"content":"x"}]})", "role"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "role must be"},
      {R"({"messages":[{"role":"user","content":5}]})", "content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", "text only"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"10"})", "'max_tokens' must be an integer"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":-1})", "'max_tokens' must be in"},
      {R"({"messages":[{"role":"user","content":"x"}],"max_tokens":1e30})", "'max_tokens' must be an integer"},
      {R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})", "'temperature' must be a number"},
      {R"({"messages":[{"role":"user","content":"x"}],"temperature":3})", "'temperature' must be in"},
      {R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", "'stream' must be true or false"},
      {R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})", "'stop'"},
      {R"({"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]})", "'stop'"},
      {R"({"messages":[{"role":"user","content":"x"}],"n":2})", "'n' is not supported"},
      {R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", "'logprobs' is not supported"},
      {R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", "'tools'"},
      {R"({"messages":[{"role":"user","content":"x"}],"model":7})", "'model' must be a string"},
      {R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]})", "last message"},
  };
  for (const auto& c : cases) {
    auto r = ParseChatRequest(c.body);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(r.error().message().find(c.says), std::string::npos) << c.body << " -> " << r.error().message();
  }
}

TEST(OpenAiRequest, ParsesCompletionsWithOpenAiDefaults) {
  auto r = ParseCompletionRequest(R"({"prompt":["Once upon"],"stop":"\n"})");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(r->chat);
  EXPECT_EQ(r->prompt, "Once upon");
  EXPECT_EQ(*r->max_tokens, 16u);
  EXPECT_EQ(r->stop, std::vector<std::string>{"\n"});
  EXPECT_FALSE(ParseCompletionRequest(R"({"prompt":["a","b"]})").has_value());
  EXPECT_FALSE(ParseCompletionRequest(R"({"prompt":""})").has_value());
  EXPECT_FALSE(ParseCompletionRequest(R"({"prompt":"a","echo":true})").has_value());
}

}  // namespace
}  // namespace llmd::http
