#include "http/openai/openai_render.h"

#include <gtest/gtest.h>

namespace llmd::http {
namespace {

using nlohmann::json;

TEST(OpenAiRender, AssistantMessageWithTextOnly) {
  engine::ParsedReply reply;
  reply.content = "Hi.";
  const json m = AssistantMessage(reply);
  EXPECT_EQ(m, json::parse(R"({"role":"assistant","content":"Hi."})"));
  EXPECT_FALSE(m.contains("reasoning_content"));
  EXPECT_FALSE(m.contains("tool_calls"));
}

TEST(OpenAiRender, AnEmptyReplyIsAnEmptyStringNotNull) {
  const json m = AssistantMessage({});
  ASSERT_TRUE(m.contains("content"));
  EXPECT_EQ(m["content"], "");
}

TEST(OpenAiRender, AssistantMessageWithOnlyToolCallsHasNullContent) {
  engine::ParsedReply reply;
  reply.tool_calls = {{"call_1", "get_weather", R"({"city":"Paris"})"}, {"call_2", "now", "{}"}};
  const json m = AssistantMessage(reply);
  ASSERT_TRUE(m.contains("content"));
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_FALSE(m.contains("reasoning_content"));
  EXPECT_EQ(m["tool_calls"], json::parse(R"([
      {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
      {"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}])"));
  // arguments stay a string of JSON, as OpenAI sends them.
  EXPECT_TRUE(m["tool_calls"][0]["function"]["arguments"].is_string());
}

TEST(OpenAiRender, AssistantMessageWithTextReasoningAndCalls) {
  engine::ParsedReply reply;
  reply.content = "Let me look.";
  reply.reasoning_content = "The user wants weather.";
  reply.tool_calls = {{"call_9", "get_weather", "{}"}};
  const json m = AssistantMessage(reply);
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"], "Let me look.");
  EXPECT_EQ(m["reasoning_content"], "The user wants weather.");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["id"], "call_9");
}

TEST(OpenAiRender, ReasoningOnlyWhenNonEmpty) {
  engine::ParsedReply reply{"x", "", {}};
  EXPECT_FALSE(AssistantMessage(reply).contains("reasoning_content"));
  const engine::ParsedReply thought{"x", "r", {}};
  EXPECT_EQ(AssistantMessage(thought)["reasoning_content"], "r");
}

TEST(OpenAiRender, ChatDeltaShapes) {
  EXPECT_EQ(ChatDelta({}), json::object());

  ReplyDelta text;
  text.content = "Hel";
  EXPECT_EQ(ChatDelta(text), json::parse(R"({"content":"Hel"})"));

  ReplyDelta thinking;
  thinking.reasoning_content = "hmm";
  EXPECT_EQ(ChatDelta(thinking), json::parse(R"({"reasoning_content":"hmm"})"));

  ReplyDelta first;
  first.tool_calls.push_back({0, "call_1", "get_weather", ""});
  EXPECT_EQ(ChatDelta(first), json::parse(R"({"tool_calls":[
      {"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]})"));

  ReplyDelta later;
  later.tool_calls.push_back({0, "", "", "{\"ci"});
  EXPECT_EQ(ChatDelta(later), json::parse(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]})"));

  // One delta with the end of one call and the start of the next, and text with it.
  ReplyDelta both;
  both.content = "x";
  both.tool_calls.push_back({0, "", "", "}"});
  both.tool_calls.push_back({1, "call_2", "now", "{"});
  const json j = ChatDelta(both);
  EXPECT_EQ(j["content"], "x");
  ASSERT_EQ(j["tool_calls"].size(), 2u);
  EXPECT_EQ(j["tool_calls"][0], json::parse(R"({"index":0,"function":{"arguments":"}"}})"));
  EXPECT_EQ(j["tool_calls"][1],
            json::parse(R"({"index":1,"id":"call_2","type":"function","function":{"name":"now","arguments":"{"}})"));
}

TEST(OpenAiRender, ChatLogprobsCarryBytesAndTopInOrder) {
  std::vector<engine::TokenLogprob> tokens(2);
  tokens[0].text = "Hi";
  tokens[0].logprob = -0.25f;
  tokens[0].top = {{"Hi", -0.25f}, {"Hello", -1.5f}, {"Hey", -3.0f}};
  tokens[1].text = "\xC3";  // half of "é": bytes still say what it is
  tokens[1].logprob = -0.5f;
  const json j = ChatLogprobs(tokens);
  EXPECT_TRUE(j.contains("refusal") && j["refusal"].is_null());
  ASSERT_EQ(j["content"].size(), 2u);
  const json& a = j["content"][0];
  EXPECT_EQ(a["token"], "Hi");
  EXPECT_FLOAT_EQ(a["logprob"].get<float>(), -0.25f);
  EXPECT_EQ(a["bytes"], json::parse("[72,105]"));
  ASSERT_EQ(a["top_logprobs"].size(), 3u);
  EXPECT_EQ(a["top_logprobs"][0]["token"], "Hi");
  EXPECT_EQ(a["top_logprobs"][1]["token"], "Hello");
  EXPECT_EQ(a["top_logprobs"][2]["token"], "Hey");
  EXPECT_FLOAT_EQ(a["top_logprobs"][1]["logprob"].get<float>(), -1.5f);
  EXPECT_EQ(a["top_logprobs"][1]["bytes"], json::parse("[72,101,108,108,111]"));
  EXPECT_FALSE(a["top_logprobs"][0].contains("top_logprobs"));
  const json& b = j["content"][1];
  EXPECT_EQ(b["bytes"], json::parse("[195]"));
  EXPECT_TRUE(b["top_logprobs"].is_array() && b["top_logprobs"].empty());  // top_logprobs 0
  // The text is not valid UTF-8 alone; it must still go out (replaced), not throw.
  EXPECT_NO_THROW(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

TEST(OpenAiRender, ChatLogprobsOfNoTokens) {
  EXPECT_EQ(ChatLogprobs({}), json::parse(R"({"content":[],"refusal":null})"));
}

TEST(OpenAiRender, CompletionLogprobsCountOffsetsFromTheGivenOne) {
  std::vector<engine::TokenLogprob> tokens(3);
  tokens[0] = {"Once", -0.1f, {{"Once", -0.1f}, {"One", -2.0f}}};
  tokens[1] = {" upon", -0.2f, {{" upon", -0.2f}}};
  tokens[2] = {" a", -0.3f, {}};
  const json j = CompletionLogprobs(tokens, 10);
  EXPECT_EQ(j["tokens"], json::parse(R"(["Once"," upon"," a"])"));
  ASSERT_EQ(j["token_logprobs"].size(), 3u);
  EXPECT_FLOAT_EQ(j["token_logprobs"][2].get<float>(), -0.3f);
  EXPECT_EQ(j["text_offset"], json::parse("[10,14,19]"));
  ASSERT_EQ(j["top_logprobs"].size(), 3u);
  EXPECT_TRUE(j["top_logprobs"][0].is_object());
  EXPECT_FLOAT_EQ(j["top_logprobs"][0]["One"].get<float>(), -2.0f);
  EXPECT_FLOAT_EQ(j["top_logprobs"][0]["Once"].get<float>(), -0.1f);
  EXPECT_EQ(j["top_logprobs"][2], json::object());

  const json from_zero = CompletionLogprobs(tokens, 0);
  EXPECT_EQ(from_zero["text_offset"], json::parse("[0,4,9]"));
  EXPECT_EQ(CompletionLogprobs({}, 7), json::parse(R"({"tokens":[],"token_logprobs":[],"top_logprobs":[],"text_offset":[]})"));
}

// The draft counters are llmd's extension of usage: only there when something was drafted.
TEST(OpenAiRender, UsageHasDraftCountersOnlyWhenDrafted) {
  engine::GenerationStats st;
  st.prompt_tokens = 12;
  st.cached_tokens = 4;
  st.generated_tokens = 30;
  EXPECT_EQ(OpenAiUsage(st), json::parse(R"({"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,
                                              "prompt_tokens_details":{"cached_tokens":4}})"));
  st.draft_tokens = 40;
  st.accepted_draft_tokens = 22;
  EXPECT_EQ(OpenAiUsage(st), json::parse(R"({"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,
                                              "prompt_tokens_details":{"cached_tokens":4},
                                              "draft_tokens":40,"accepted_draft_tokens":22})"));
}

// So are the overflow counters: only there when truncation:"auto" dropped turns.
TEST(OpenAiRender, UsageHasDropCountersOnlyWhenTurnsWereDropped) {
  engine::GenerationStats st;
  st.prompt_tokens = 12;
  st.generated_tokens = 3;
  EXPECT_FALSE(OpenAiUsage(st).contains("dropped_turns"));
  st.dropped_tokens = 150;
  st.dropped_turns = 2;
  const json usage = OpenAiUsage(st);
  EXPECT_EQ(usage["dropped_tokens"], 150);
  EXPECT_EQ(usage["dropped_turns"], 2);
}

}  // namespace
}  // namespace llmd::http
