#include "http/anthropic/anthropic_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/generation.h"
#include "http/recording_responder.h"
#include "http/sse_writer.h"

namespace llmd::http {
namespace {

using nlohmann::json;

AnthropicRequest Parse(const std::string& body, AnthropicBody kind = AnthropicBody::kMessages) {
  auto r = ParseAnthropicRequest(body, kind);
  EXPECT_TRUE(r.has_value()) << r.error().ToString() << "\n" << body;
  return r.has_value() ? *r : AnthropicRequest{};
}

// A minimal valid body with `more` fields (JSON members, comma first) added.
std::string Body(const std::string& more = "") {
  return R"({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}])" + more + "}";
}

const char* kWeatherTool = R"({"name": "get_weather", "description": "weather now",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}})";

// ---------------------------------------------------------------------------------------
// The request.

TEST(AnthropicRequest, ParsesEveryField) {
  AnthropicRequest r = Parse(std::string(R"({
    "model": "qwen", "max_tokens": 64, "temperature": 0.5, "top_p": 0.9, "top_k": 20, "stream": true,
    "stop_sequences": ["END", "STOP"], "metadata": {"user_id": "u1"}, "service_tier": "auto",
    "speed": "standard", "cache_control": {"type": "ephemeral", "ttl": "5m"}, "mcp_servers": [],
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "and kind"}],
    "thinking": {"type": "enabled", "budget_tokens": 32},
    "output_config": {"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}},
    "tools": [)") + kWeatherTool + R"(, {"type": "custom", "name": "get_time", "input_schema": {"type": "object"},
               "strict": true, "eager_input_streaming": true, "defer_loading": false, "allowed_callers": ["direct"],
               "cache_control": {"type": "ephemeral"}}],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hm", "signature": "sig"},
        {"type": "text", "text": "Let me check.", "citations": []},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "thanks"}]}
    ]})");
  EXPECT_TRUE(r.chat);
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be brief\nand kind");
  EXPECT_EQ(r.messages[1].role, "user");
  EXPECT_EQ(r.messages[1].content, "hi\nthere");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "Let me check.");  // the thinking block is dropped
  ASSERT_EQ(r.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[2].tool_calls[0].id, "toolu_1");
  EXPECT_EQ(r.messages[2].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[2].tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.messages[3].content, "sunny");
  EXPECT_EQ(r.messages[3].tool_call_id, "toolu_1");
  EXPECT_EQ(r.messages[4].role, "user");
  EXPECT_EQ(r.messages[4].content, "thanks");

  EXPECT_EQ(*r.model, "qwen");
  EXPECT_EQ(*r.max_tokens, 64u);
  EXPECT_FLOAT_EQ(*r.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*r.top_p, 0.9f);
  EXPECT_EQ(*r.top_k, 20);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(r.enable_thinking, true);
  EXPECT_FALSE(r.omit_thinking);
  ASSERT_EQ(r.format.tools.size(), 2u);
  EXPECT_EQ(r.format.tools[0].name, "get_weather");
  EXPECT_EQ(r.format.tools[0].description, "weather now");
  EXPECT_EQ(json::parse(r.format.tools[0].parameters),
            json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}})"));
  EXPECT_EQ(r.format.tools[1].name, "get_time");
  EXPECT_EQ(r.format.tools[1].description, "");
  EXPECT_EQ(json::parse(r.format.tools[1].parameters), json::parse(R"({"type": "object"})"));
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kNamed);
  EXPECT_EQ(r.format.tool_name, "get_weather");
  EXPECT_FALSE(r.format.parallel_tool_calls);
  EXPECT_EQ(json::parse(r.format.json_schema), json::parse(R"({"type":"object"})"));
  EXPECT_EQ(r.n, 1u);
  EXPECT_EQ(r.top_logprobs, -1);
}

TEST(AnthropicRequest, AStringTurnWithTheDefaults) {
  AnthropicRequest r = Parse(Body());
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_EQ(*r.model, "m");
  EXPECT_EQ(*r.max_tokens, 16u);
  EXPECT_FALSE(r.temperature.has_value());
  EXPECT_FALSE(r.top_p.has_value());
  EXPECT_FALSE(r.top_k.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.enable_thinking.has_value());  // the model's configured default
  EXPECT_TRUE(r.format.plain());
  EXPECT_TRUE(r.format.parallel_tool_calls);
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kAuto);
}

TEST(AnthropicRequest, NullMeansAbsent) {
  AnthropicRequest r = Parse(Body(R"(, "system": null, "temperature": null, "tools": null, "tool_choice": null,
      "thinking": null, "stop_sequences": null, "stream": null, "metadata": null, "container": null,
      "mcp_servers": null, "output_config": null, "service_tier": null, "inference_geo": null)"));
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(r.temperature.has_value());
  EXPECT_TRUE(r.format.plain());
}

TEST(AnthropicRequest, MaxTokensZeroIsAllowed) {
  AnthropicRequest r = Parse(R"({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(*r.max_tokens, 0u);
}

TEST(AnthropicRequest, ConsecutiveTurnsOfOneRoleAreOneMessage) {
  AnthropicRequest r = Parse(R"({"model": "m", "max_tokens": 8, "messages": [
      {"role": "user", "content": "one"}, {"role": "user", "content": [{"type": "text", "text": "two"}]},
      {"role": "assistant", "content": "a"}, {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
      {"role": "user", "content": "three"}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].content, "one\ntwo");
  EXPECT_EQ(r.messages[1].role, "assistant");
  EXPECT_EQ(r.messages[1].content, "a\nb");
  EXPECT_EQ(r.messages[2].content, "three");
}

TEST(AnthropicRequest, ParallelCallsAndTheirResults) {
  AnthropicRequest r = Parse(R"({"model": "m", "max_tokens": 8, "messages": [
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "f", "input": {"n": 1}},
        {"type": "tool_use", "id": "b", "name": "f", "input": {}, "caller": {"type": "direct"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "one"},
                                                                {"type": "text", "text": "more"}]},
        {"type": "tool_result", "tool_use_id": "b", "content": "boom", "is_error": true}]}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1].role, "assistant");
  EXPECT_EQ(r.messages[1].content, "");
  ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[1].tool_calls[1].id, "b");
  EXPECT_EQ(r.messages[1].tool_calls[1].arguments, "{}");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].content, "one\nmore");
  EXPECT_EQ(r.messages[2].tool_call_id, "a");
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.messages[3].content, "Error: boom");  // is_error, in words the model reads
  EXPECT_EQ(r.messages[3].tool_call_id, "b");
}

TEST(AnthropicRequest, AToolResultWithoutContentIsEmpty) {
  AnthropicRequest r = Parse(R"({"model": "m", "max_tokens": 8, "messages": [
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].content, "");
}

TEST(AnthropicRequest, SystemTurnsAndThinkingOnlyTurns) {
  AnthropicRequest r = Parse(R"({"model": "m", "max_tokens": 8, "system": "first", "messages": [
      {"role": "user", "content": "q"},
      {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
      {"role": "system", "content": [{"type": "text", "text": "later"}]},
      {"role": "user", "content": []}]})");
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "first");
  EXPECT_EQ(r.messages[2].role, "assistant");  // a turn of dropped blocks is still a turn
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "system");
  EXPECT_EQ(r.messages[3].content, "later");
  EXPECT_EQ(r.messages[4].role, "user");
  EXPECT_EQ(r.messages[4].content, "");
}

TEST(AnthropicRequest, ToolChoices) {
  const std::string tools = std::string(R"(, "tools": [)") + kWeatherTool + "]";
  AnthropicRequest r = Parse(Body(tools + R"(, "tool_choice": {"type": "auto"})"));
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kAuto);
  EXPECT_TRUE(r.format.parallel_tool_calls);
  r = Parse(Body(tools + R"(, "tool_choice": {"type": "any", "disable_parallel_tool_use": true})"));
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kRequired);
  EXPECT_FALSE(r.format.parallel_tool_calls);
  r = Parse(Body(tools + R"(, "tool_choice": {"type": "auto", "disable_parallel_tool_use": false})"));
  EXPECT_TRUE(r.format.parallel_tool_calls);
  r = Parse(Body(tools + R"(, "tool_choice": {"type": "none"})"));
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kNone);
  EXPECT_FALSE(r.format.tools.empty());  // the tools are still shown
  r = Parse(Body(R"(, "tools": [], "tool_choice": {"type": "auto"})"));
  EXPECT_TRUE(r.format.tools.empty());
}

TEST(AnthropicRequest, ThinkingModes) {
  AnthropicRequest r = Parse(Body(R"(, "thinking": {"type": "disabled"})"));
  EXPECT_EQ(r.enable_thinking, false);
  r = Parse(Body(R"(, "thinking": {"type": "adaptive"})"));
  EXPECT_EQ(r.enable_thinking, true);
  EXPECT_FALSE(r.omit_thinking);
  r = Parse(Body(R"(, "thinking": {"type": "adaptive", "display": "omitted"})"));
  EXPECT_TRUE(r.omit_thinking);
  r = Parse(Body(R"(, "thinking": {"type": "enabled", "budget_tokens": 15, "display": "summarized"})"));
  EXPECT_EQ(r.enable_thinking, true);
  EXPECT_FALSE(r.omit_thinking);
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokensAndReadsNoSampling) {
  AnthropicRequest r = Parse(std::string(R"({"model": "m", "system": "s", "temperature": 7, "stream": true,
      "stop_sequences": 5, "thinking": {"type": "enabled", "budget_tokens": 2048},
      "tools": [)") + kWeatherTool + R"(], "messages": [{"role": "user", "content": "x"}]})",
                             AnthropicBody::kCountTokens);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.temperature.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.enable_thinking, true);
  EXPECT_FALSE(r.format.tools.empty());
  EXPECT_FALSE(ParseAnthropicRequest(R"({"messages": [{"role": "user", "content": "x"}]})",
                                     AnthropicBody::kCountTokens).has_value());  // model is still required
}

TEST(AnthropicRequest, RefusesWhatItCannotHonourWithTheFieldNamed) {
  auto with_tools = [](const std::string& more) { return Body(std::string(R"(, "tools": [)") + kWeatherTool + "]" + more); };
  auto turns = [](const std::string& messages) {
    return R"({"model": "m", "max_tokens": 8, "messages": )" + messages + "}";
  };
  const std::string call = R"({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]})";
  struct Case {
    std::string body;
    const char* says;
  } cases[] = {
      {"", "not valid JSON"},
      {"[1]", "JSON object"},
      {R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}]})", "'model' must be a non-empty string"},
      {R"({"model": 5, "max_tokens": 8, "messages": []})", "'model' must be a non-empty string"},
      {R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})", "'max_tokens' is required"},
      {R"({"model": "m", "max_tokens": -1, "messages": []})", "'max_tokens' must be in 0..4294967295"},
      {R"({"model": "m", "max_tokens": 1.5, "messages": []})", "'max_tokens' must be an integer"},
      {R"({"model": "m", "max_tokens": 8})", "'messages' is required"},
      {turns("[]"), "'messages' must be a non-empty array"},
      {turns("{}"), "'messages' must be a non-empty array"},
      {turns("[5]"), "'messages[0]' must be an object"},
      {turns(R"([{"content": "x"}])"), "'messages[0].role' must be user, assistant or system"},
      {turns(R"([{"role": "tool", "content": "x"}])"), "'messages[0].role' must be one of user, assistant, system"},
      {turns(R"([{"role": "user"}])"), "'messages[0].content' must be a string or an array of content blocks"},
      {turns(R"([{"role": "user", "content": 5}])"), "'messages[0].content' must be a string or an array"},
      {turns(R"([{"role": "user", "content": [5]}])"), "'messages[0].content[0]' must be an object"},
      {turns(R"([{"role": "user", "content": [{"text": "x"}]}])"), "'messages[0].content[0].type' must be a string"},
      {turns(R"([{"role": "user", "content": [{"type": "text"}]}])"), "'messages[0].content[0].text' must be a string"},
      {turns(R"([{"role": "user", "content": [{"type": "text", "text": "x", "citations": 5}]}])"),
       "'messages[0].content[0].citations' must be an array"},
      {turns(R"([{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "x"}}]}])"),
       "'messages[0].content[0].cache_control.type' must be one of ephemeral"},
      {turns(R"([{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": ""}}]}])"),
       "'messages[0].content[0]' is an image block: llmd serves text only"},
      {turns(R"([{"role": "user", "content": [{"type": "document", "source": {}}]}])"),
       "'messages[0].content[0]' is a document block: llmd serves text only"},
      {turns(R"([{"role": "user", "content": [{"type": "search_result"}]}])"), "search_result block: llmd serves text"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "server_tool_use"}]},
                 {"role": "user", "content": "x"}])"),
       "'messages[1].content[0].type' 'server_tool_use' is not supported by llmd"},
      {turns(R"([{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}])"),
       "'messages[0].content[0]' is a tool_use block, which only assistant turns carry"},
      {turns(R"([{"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}])"),
       "is a thinking block, which only assistant turns carry"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "tool_result",
                 "tool_use_id": "a"}]}, {"role": "user", "content": "x"}])"),
       "'messages[1].content[0]' is a tool_result block, which only user turns carry"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "thinking"}]},
                 {"role": "user", "content": "x"}])"),
       "'messages[1].content[0].thinking' must be a string"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "redacted_thinking"}]},
                 {"role": "user", "content": "x"}])"),
       "'messages[1].content[0].data' must be a string"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "tool_use", "name": "f",
                 "input": {}}]}])"),
       "'messages[1].content[0].id' must be a non-empty string"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a",
                 "input": {}}]}])"),
       "'messages[1].content[0].name' must be a non-empty string"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a",
                 "name": "f", "input": "{}"}]}])"),
       "'messages[1].content[0].input' must be an object"},
      {turns(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a",
                 "name": "f", "input": {}, "caller": {"type": "code_execution_20250825"}}]}])"),
       "'messages[1].content[0].caller' must be {\"type\":\"direct\"}"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call + ", " + call + "]"),
       "'messages[2].content[0].id' 'a' is used by an earlier tool_use block"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call + "]"),
       "'messages' has a tool_use block with id 'a' but no tool_result for it"},
      {turns(R"([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "x"}]}])"),
       "'messages[0].content[0].tool_use_id' 'zz' answers no tool_use block before it"},
      {turns(R"([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}])"),
       "'messages[0].content[0].tool_use_id' must be a non-empty string"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call +
             R"(, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"},
                 {"type": "tool_result", "tool_use_id": "a"}]}])"),
       "'messages[2].content[1].tool_use_id' 'a' was answered already"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call +
             R"(, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": 5}]}])"),
       "'messages[2].content[0].content' must be a string or an array of text blocks"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call +
             R"(, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image"}]}]}])"),
       "'messages[2].content[0].content[0]' is an image block: llmd serves text only"},
      {turns("[{\"role\": \"user\", \"content\": \"q\"}, " + call +
             R"(, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}]}])"),
       "'messages[2].content[0].is_error' must be true or false"},
      {turns(R"([{"role": "user", "content": "x"}, {"role": "assistant", "content": "The answer is ("}])"),
       "the last message must not be the assistant's (llmd does not continue a reply)"},
      {turns(R"([{"role": "system", "content": "x"}])"), "'messages' must have a user turn"},
      {turns(R"([{"role": "system", "content": [{"type": "image"}]}, {"role": "user", "content": "x"}])"),
       "'messages[0].content[0]' is an image block"},
      {Body(R"(, "system": 5)"), "'system' must be a string or an array of text blocks"},
      {Body(R"(, "system": [{"type": "image"}])"), "'system[0]' is an image block: llmd serves text only"},
      {Body(R"(, "temperature": 1.5)"), "'temperature' must be in 0.0..1.0"},
      {Body(R"(, "temperature": "hot")"), "'temperature' must be a number"},
      {Body(R"(, "top_p": 2)"), "'top_p' must be in 0.0..1.0"},
      {Body(R"(, "top_k": 0)"), "'top_k' must be in 1..1048576"},
      {Body(R"(, "stream": "yes")"), "'stream' must be true or false"},
      {Body(R"(, "stop_sequences": "END")"), "'stop_sequences' must be an array of strings"},
      {Body(R"(, "stop_sequences": [""])"), "'stop_sequences[0]' must be a non-empty string"},
      {Body(R"(, "stop_sequences": ["a", 5])"), "'stop_sequences[1]' must be a non-empty string"},
      {Body(R"(, "stop_sequences": [")" + std::string(257, 'x') + "\"]"), "'stop_sequences[0]' is longer than 256 bytes"},
      {Body(R"(, "stop_sequences": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"])"),
       "'stop_sequences' has more than 16 entries"},
      {Body(R"(, "tools": {})"), "'tools' must be an array"},
      {Body(R"(, "tools": [5])"), "'tools[0]' must be an object"},
      {Body(R"(, "tools": [{"type": "web_search_20250305", "name": "web_search"}])"),
       "'tools[0]' is a 'web_search_20250305' tool, which llmd does not have (only custom tools"},
      {Body(R"(, "tools": [{"type": "bash_20250124", "name": "bash"}])"), "'tools[0]' is a 'bash_20250124' tool"},
      {Body(R"(, "tools": [{"input_schema": {}}])"), "'tools[0].name' must be a non-empty string"},
      {Body(R"(, "tools": [{"name": "f"}])"), "'tools[0].input_schema' must be an object (a JSON schema)"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": "{}"}])"), "'tools[0].input_schema' must be an object"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}, "description": 5}])"),
       "'tools[0].description' must be a string"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}}, {"name": "f", "input_schema": {}}])"),
       "'tools[1].name' 'f' is used twice"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}, "strict": 1}])"), "'tools[0].strict' must be true or false"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}, "defer_loading": true}])"),
       "'tools[0].defer_loading' true is not supported: llmd has no tool search"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}, "allowed_callers": ["code_execution_20250825"]}])"),
       "'tools[0].allowed_callers' must be [\"direct\"]"},
      {Body(R"(, "tools": [{"name": "f", "input_schema": {}, "input_examples": [{"a": 1}]}])"),
       "'tools[0].input_examples' is not supported by llmd"},
      {with_tools(R"(, "tool_choice": "auto")"), "'tool_choice' must be an object"},
      {with_tools(R"(, "tool_choice": {})"), "'tool_choice.type' must be auto, any, tool or none"},
      {with_tools(R"(, "tool_choice": {"type": "required"})"), "'tool_choice.type' must be one of auto, any, tool, none"},
      {with_tools(R"(, "tool_choice": {"type": "tool"})"), "'tool_choice.name' must be a non-empty string"},
      {with_tools(R"(, "tool_choice": {"type": "tool", "name": "nope"})"), "'tool_choice.name' 'nope' is not in 'tools'"},
      {with_tools(R"(, "tool_choice": {"type": "any", "disable_parallel_tool_use": 1})"),
       "'tool_choice.disable_parallel_tool_use' must be true or false"},
      {Body(R"(, "tool_choice": {"type": "any"})"), "'tool_choice' asks for a tool call, but 'tools' is empty"},
      {Body(R"(, "thinking": true)"), "'thinking' must be an object"},
      {Body(R"(, "thinking": {})"), "'thinking.type' must be enabled, adaptive or disabled"},
      {Body(R"(, "thinking": {"type": "between_tools"})"), "'thinking.type' 'between_tools' is not supported by llmd"},
      {Body(R"(, "thinking": {"type": "enabled"})"), "'thinking.budget_tokens' is required"},
      {Body(R"(, "thinking": {"type": "enabled", "budget_tokens": 0})"), "'thinking.budget_tokens' must be in 1.."},
      {Body(R"(, "thinking": {"type": "enabled", "budget_tokens": 16})"),
       "'thinking.budget_tokens' must be less than 'max_tokens'"},
      {Body(R"(, "thinking": {"type": "adaptive", "display": "full"})"),
       "'thinking.display' must be one of summarized, omitted"},
      {Body(R"(, "output_config": 5)"), "'output_config' must be an object"},
      {Body(R"(, "output_config": {"effort": "low"})"), "'output_config.effort' 'low' is not supported by llmd"},
      {Body(R"(, "output_config": {"effort": "extreme"})"), "'output_config.effort' must be one of low"},
      {Body(R"(, "output_config": {"format": {"type": "json_object"}})"),
       "'output_config.format.type' must be one of json_schema"},
      {Body(R"(, "output_config": {"format": {"type": "json_schema"}})"),
       "'output_config.format.schema' must be an object (a JSON schema)"},
      {Body(R"(, "container": "c_1")"), "'container' is not supported: llmd has no code execution containers"},
      {Body(R"(, "mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}])"),
       "'mcp_servers' is not supported: llmd connects to no MCP servers"},
      {Body(R"(, "context_management": {"edits": []})"), "'context_management' is not supported"},
      {Body(R"(, "diagnostics": {"previous_message_id": null})"), "'diagnostics' is not supported"},
      {Body(R"(, "inference_geo": "us")"), "'inference_geo' is not supported: llmd runs on this machine only"},
      {Body(R"(, "service_tier": "priority")"), "'service_tier' must be one of auto, standard_only (got 'priority')"},
      {Body(R"(, "speed": "fast")"), "'speed' \"fast\" is not supported by llmd (only standard)"},
      {Body(R"(, "cache_control": {"type": "ephemeral", "ttl": "1d"})"), "'cache_control.ttl' must be one of 5m, 1h"},
      {Body(R"(, "metadata": "u1")"), "'metadata' must be an object"},
      {Body(R"(, "metadata": {"user_id": 5})"), "'metadata.user_id' must be a string"},
  };
  for (const Case& c : cases) {
    auto r = ParseAnthropicRequest(c.body);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << "body: " << c.body << "\nwant: " << c.says << "\ngot: " << r.error().message();
  }
}

// ---------------------------------------------------------------------------------------
// How the reply ended.

TEST(AnthropicStop, TheSequenceThatEndsInTheLastToken) {
  const std::vector<std::string> stops = {"END", "\n\n", "Z"};
  // "Hello END" with the last token " EN" + "D": "END" ends in the last token "D".
  EXPECT_EQ(MatchedStopSequence(stops, "Hello END", 1), "END");
  EXPECT_EQ(MatchedStopSequence(stops, "Hello END", 4), "END");
  EXPECT_EQ(MatchedStopSequence(stops, "Hello ENDing", 6), "END");  // the token went on past it
  // A stop sequence earlier in the text did not end the reply (it would have ended it there).
  EXPECT_EQ(MatchedStopSequence(stops, "END and then", 4), std::nullopt);
  EXPECT_EQ(MatchedStopSequence(stops, "no stop here", 4), std::nullopt);
  EXPECT_EQ(MatchedStopSequence(stops, "", 0), std::nullopt);
  EXPECT_EQ(MatchedStopSequence({}, "END", 3), std::nullopt);
  // Two in the last token: the first to begin.
  EXPECT_EQ(MatchedStopSequence(stops, "abZ\n\nEND", 6), "Z");
  EXPECT_EQ(MatchedStopSequence({"ab", "a"}, "xab", 2), "a");  // same start: the shorter completes first
  EXPECT_EQ(MatchedStopSequence(stops, "END", 99), "END");      // a length past the text is clamped
}

engine::GenerationStats Stats(engine::FinishReason finish = engine::FinishReason::kStop, int32_t generated = 5) {
  engine::GenerationStats st;
  st.prompt_tokens = 12;
  st.cached_tokens = 4;
  st.generated_tokens = generated;
  st.finish_reason = finish;
  return st;
}

TEST(AnthropicStop, Reasons) {
  using engine::FinishReason;
  EXPECT_EQ(MessageEndFor(Stats(), false, 64, false, std::nullopt).stop_reason, "end_turn");
  EXPECT_EQ(MessageEndFor(Stats(), true, 64, false, std::nullopt).stop_reason, "tool_use");
  MessageEnd stop = MessageEndFor(Stats(), false, 64, false, "END");
  EXPECT_EQ(stop.stop_reason, "stop_sequence");
  EXPECT_EQ(stop.stop_sequence, "END");
  EXPECT_EQ(MessageEndFor(Stats(), true, 64, false, "END").stop_sequence, std::nullopt);  // the calls win
  EXPECT_EQ(MessageEndFor(Stats(FinishReason::kLength, 64), false, 64, false, std::nullopt).stop_reason, "max_tokens");
  EXPECT_EQ(MessageEndFor(Stats(FinishReason::kLength, 0), false, 0, false, std::nullopt).stop_reason, "max_tokens");
  EXPECT_EQ(MessageEndFor(Stats(FinishReason::kLength, 10), false, 64, false, std::nullopt).stop_reason,
            "model_context_window_exceeded");
  EXPECT_EQ(MessageEndFor(Stats(), true, 64, true, "END").stop_reason, "refusal");
  EXPECT_EQ(MessageEndFor(Stats(), false, 64, false, std::nullopt).stats.prompt_tokens, 12);
}

// ---------------------------------------------------------------------------------------
// The Message.

MessageContext Context(bool omit_thinking = false) { return {"msg_abc", "qwen", omit_thinking}; }

MessageEnd End(const char* reason = "end_turn", engine::GenerationStats stats = Stats()) {
  MessageEnd end;
  end.stop_reason = reason;
  end.stats = stats;
  return end;
}

TEST(AnthropicRender, ATextReplyIsTheWholeMessage) {
  EXPECT_EQ(json::parse(RenderMessage(Context(), {"Hello", "", {}}, End())), json::parse(R"({
    "id": "msg_abc", "type": "message", "role": "assistant", "model": "qwen",
    "content": [{"type": "text", "text": "Hello"}],
    "stop_reason": "end_turn", "stop_sequence": null, "stop_details": null,
    "usage": {"input_tokens": 8, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4, "output_tokens": 5}})"));
  // Field order as Anthropic writes it.
  EXPECT_EQ(RenderMessage(Context(), {"", "", {}}, End()).rfind(R"({"id":"msg_abc","type":"message","role":"assistant")", 0),
            0u);
}

TEST(AnthropicRender, ThinkingTextAndToolUseInOrder) {
  engine::ParsedReply reply{"Checking.", "The user wants weather.",
                            {{"toolu_1", "get_weather", R"({"city":"Paris"})"}, {"", "get_time", ""}}};
  json m = json::parse(RenderMessage(Context(), reply, End("tool_use")));
  EXPECT_EQ(m["content"], json::parse(R"([
    {"type": "thinking", "thinking": "The user wants weather.", "signature": ""},
    {"type": "text", "text": "Checking."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    {"type": "tool_use", "id": "toolu_abc_1", "name": "get_time", "input": {}}])"));
  EXPECT_EQ(m["stop_reason"], "tool_use");
}

TEST(AnthropicRender, OmittedThinkingKeepsItsBlockWithoutText) {
  json m = json::parse(RenderMessage(Context(true), {"A", "secret", {}}, End()));
  EXPECT_EQ(m["content"][0], json::parse(R"({"type": "thinking", "thinking": "", "signature": ""})"));
  EXPECT_EQ(m["content"][1]["text"], "A");
}

TEST(AnthropicRender, AnEmptyReplyHasNoBlocks) {
  json m = json::parse(RenderMessage(Context(), {"", "", {}}, End("max_tokens", Stats(engine::FinishReason::kLength, 0))));
  EXPECT_EQ(m["content"], json::array());
  EXPECT_EQ(m["stop_reason"], "max_tokens");
  EXPECT_EQ(m["usage"]["output_tokens"], 0);
}

TEST(AnthropicRender, StopSequenceAndRefusal) {
  MessageEnd end = End("stop_sequence");
  end.stop_sequence = "END";
  EXPECT_EQ(json::parse(RenderMessage(Context(), {"x", "", {}}, end))["stop_sequence"], "END");
  json refused = json::parse(RenderMessage(Context(), {"", "", {}}, End("refusal")));
  EXPECT_EQ(refused["stop_reason"], "refusal");
  EXPECT_EQ(refused["stop_details"]["type"], "refusal");
  EXPECT_TRUE(refused["stop_details"]["category"].is_null());
  EXPECT_EQ(refused["stop_details"]["explanation"], "the guard model judged the answer unsafe");
  MessageEnd guard = End("refusal");
  guard.refusal_explanation = "refused by the guard: the answer was judged unsafe (categories: Violent)";
  EXPECT_EQ(json::parse(RenderMessage(Context(), {"", "", {}}, guard))["stop_details"]["explanation"],
            guard.refusal_explanation);
}

TEST(AnthropicRender, BrokenUtf8IsReplacedNotThrown) {
  json m = json::parse(RenderMessage(Context(), {"a\xE2\x82", "", {}}, End()));
  EXPECT_EQ(m["content"][0]["text"], "a\uFFFD");
}

TEST(AnthropicRender, TokenCount) { EXPECT_EQ(RenderTokenCount(42), R"({"input_tokens":42})"); }

// ---------------------------------------------------------------------------------------
// The stream.

// The events, checked to be JSON objects whose type is their name, and the Message a client
// builds from them (as @anthropic-ai/sdk's MessageStream accumulates it).
struct Recorder {
  std::vector<std::string> types;
  std::vector<json> data;
  json message;
  std::vector<std::string> json_bufs;

  void Add(const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      json d = json::parse(e.data);
      EXPECT_EQ(d["type"], e.event);
      types.push_back(e.event);
      data.push_back(d);
      Accumulate(d);
    }
  }

  void Accumulate(const json& d) {
    const std::string type = d["type"];
    if (type == "message_start") {
      EXPECT_TRUE(message.is_null()) << "a second message_start";
      message = d["message"];
      return;
    }
    ASSERT_FALSE(message.is_null()) << type << " before message_start";
    if (type == "content_block_start") {
      EXPECT_EQ(d["index"], message["content"].size());
      message["content"].push_back(d["content_block"]);
      json_bufs.emplace_back();
    } else if (type == "content_block_delta") {
      const size_t i = d["index"];
      ASSERT_LT(i, message["content"].size());
      json& block = message["content"][i];
      const json& delta = d["delta"];
      if (delta["type"] == "text_delta") {
        EXPECT_EQ(block["type"], "text");
        block["text"] = block["text"].get<std::string>() + delta["text"].get<std::string>();
      } else if (delta["type"] == "thinking_delta") {
        EXPECT_EQ(block["type"], "thinking");
        block["thinking"] = block["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
      } else if (delta["type"] == "signature_delta") {
        EXPECT_EQ(block["type"], "thinking");
        block["signature"] = delta["signature"];
      } else if (delta["type"] == "input_json_delta") {
        EXPECT_EQ(block["type"], "tool_use");
        json_bufs[i] += delta["partial_json"].get<std::string>();
      } else {
        ADD_FAILURE() << "unknown delta " << delta.dump();
      }
    } else if (type == "content_block_stop") {
      const size_t i = d["index"];
      ASSERT_LT(i, message["content"].size());
      if (message["content"][i]["type"] == "tool_use" && !json_bufs[i].empty()) {
        message["content"][i]["input"] = json::parse(json_bufs[i]);
      }
    } else if (type == "message_delta") {
      message["stop_reason"] = d["delta"]["stop_reason"];
      message["stop_sequence"] = d["delta"]["stop_sequence"];
      message["stop_details"] = d["delta"]["stop_details"];
      message["usage"] = d["usage"];
    }
  }
};

ReplyDelta Content(const std::string& text) { return {"", text, {}}; }
ReplyDelta Reasoning(const std::string& text) { return {text, "", {}}; }

TEST(AnthropicStream, ATextReplyInOrder) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Begin());
  rec.Add(stream.Next(Content("Hel")));
  rec.Add(stream.Next(ReplyDelta{}));  // nothing new: no event
  rec.Add(stream.Next(Content("lo")));
  engine::ParsedReply reply{"Hello", "", {}};
  rec.Add(stream.Finish(reply, End()));
  EXPECT_EQ(rec.types, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                                  "content_block_delta", "content_block_stop", "message_delta",
                                                  "message_stop"}));
  EXPECT_EQ(rec.data[0], json::parse(R"({"type": "message_start", "message": {
      "id": "msg_abc", "type": "message", "role": "assistant", "model": "qwen", "content": [],
      "stop_reason": null, "stop_sequence": null, "stop_details": null,
      "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0}}})"));
  EXPECT_EQ(rec.data[1], json::parse(R"({"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}})"));
  EXPECT_EQ(rec.data[2], json::parse(R"({"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": "Hel"}})"));
  EXPECT_EQ(rec.data[4], json::parse(R"({"type": "content_block_stop", "index": 0})"));
  EXPECT_EQ(rec.data[5], json::parse(R"({"type": "message_delta",
      "delta": {"stop_reason": "end_turn", "stop_sequence": null, "stop_details": null},
      "usage": {"input_tokens": 8, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4, "output_tokens": 5}})"));
  EXPECT_EQ(rec.data[6], json::parse(R"({"type": "message_stop"})"));
  // What the client builds is the Message a non-streamed request gets.
  EXPECT_EQ(rec.message, json::parse(RenderMessage(Context(), reply, End())));
  EXPECT_TRUE(stream.Next(Content("late")).empty());
  EXPECT_TRUE(stream.Finish(reply, End()).empty());
  EXPECT_TRUE(stream.Begin().empty());
}

TEST(AnthropicStream, ThinkingThenTextAndTheHeldBackRest) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Reasoning("Let me")));  // Begin is implied
  rec.Add(stream.Next(Reasoning(" think")));
  rec.Add(stream.Next(Content("Answer")));
  engine::ParsedReply reply{"Answer!", "Let me think", {}};  // "!" was held back
  rec.Add(stream.Finish(reply, End()));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "message_start", "content_block_start", "content_block_delta", "content_block_delta",
                           "content_block_delta", "content_block_stop",
                           "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                           "message_delta", "message_stop"}));
  EXPECT_EQ(rec.data[1]["content_block"], json::parse(R"({"type": "thinking", "thinking": "", "signature": ""})"));
  EXPECT_EQ(rec.data[2]["delta"], json::parse(R"({"type": "thinking_delta", "thinking": "Let me"})"));
  // The thinking block closes with its (empty) signature.
  EXPECT_EQ(rec.data[4], json::parse(R"({"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "signature_delta", "signature": ""}})"));
  EXPECT_EQ(rec.data[6]["index"], 1);
  EXPECT_EQ(rec.data[8]["delta"]["text"], "!");
  EXPECT_EQ(rec.message, json::parse(RenderMessage(Context(), reply, End())));
}

TEST(AnthropicStream, OmittedThinkingStreamsNoThinkingText) {
  AnthropicStream stream(Context(true));
  Recorder rec;
  rec.Add(stream.Next(Reasoning("secret")));
  rec.Add(stream.Next(Content("A")));
  engine::ParsedReply reply{"A", "secret", {}};
  rec.Add(stream.Finish(reply, End()));
  EXPECT_EQ(rec.types, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                                  "content_block_stop", "content_block_start", "content_block_delta",
                                                  "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(rec.data[2]["delta"]["type"], "signature_delta");
  EXPECT_EQ(rec.message, json::parse(RenderMessage(Context(true), reply, End())));
}

TEST(AnthropicStream, TextThenToolCallsFromReplyDeltas) {
  int ids = 0;
  ReplyDeltas deltas([&] { return "toolu_" + std::to_string(++ids); });
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Begin());
  const std::vector<engine::ParsedReply> parses = {
      {"Checking.", "", {}},
      {"Checking.", "", {{"", "get_weather", R"({"ci)"}}},
      {"Checking.", "", {{"", "get_weather", R"({"city":"Paris"})"}}},
      {"Checking.", "", {{"", "get_weather", R"({"city":"Paris"})"}, {"", "get_time", "{}"}}},
  };
  for (const auto& parse : parses) rec.Add(stream.Next(deltas.Next(parse)));
  const engine::ParsedReply reply = deltas.WithIds(parses.back());
  rec.Add(stream.Finish(reply, End("tool_use")));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "message_start", "content_block_start", "content_block_delta", "content_block_stop",
                           "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                           "content_block_start", "content_block_delta", "content_block_stop",
                           "message_delta", "message_stop"}));
  EXPECT_EQ(rec.data[4], json::parse(R"({"type": "content_block_start", "index": 1, "content_block":
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}})"));
  EXPECT_EQ(rec.data[5], json::parse(R"({"type": "content_block_delta", "index": 1,
                                         "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}})"));
  EXPECT_EQ(rec.data[6]["delta"]["partial_json"], "ty\":\"Paris\"}");
  EXPECT_EQ(rec.data[8]["content_block"]["id"], "toolu_2");
  EXPECT_EQ(rec.data[8]["index"], 2);
  EXPECT_EQ(rec.data[11]["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(rec.message, json::parse(RenderMessage(Context(), reply, End("tool_use"))));
}

TEST(AnthropicStream, CallsOnlyAtTheEndAreStreamedByFinish) {
  AnthropicStream stream(Context());
  Recorder rec;
  engine::ParsedReply reply{"", "", {{"toolu_9", "f", R"({"a":1})"}}};
  rec.Add(stream.Finish(reply, End("tool_use")));
  EXPECT_EQ(rec.types, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                                  "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(rec.message, json::parse(RenderMessage(Context(), reply, End("tool_use"))));
}

TEST(AnthropicStream, AnEmptyReplyIsStartDeltaStop) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Finish({"", "", {}}, End("refusal")));
  EXPECT_EQ(rec.types, (std::vector<std::string>{"message_start", "message_delta", "message_stop"}));
  EXPECT_EQ(rec.data[1]["delta"]["stop_reason"], "refusal");
  EXPECT_EQ(rec.data[1]["delta"]["stop_details"]["type"], "refusal");
}

TEST(AnthropicStream, TheStopSequenceComesWithMessageDelta) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("x")));
  MessageEnd end = End("stop_sequence");
  end.stop_sequence = "END";
  rec.Add(stream.Finish({"x", "", {}}, end));
  EXPECT_EQ(rec.message["stop_reason"], "stop_sequence");
  EXPECT_EQ(rec.message["stop_sequence"], "END");
}

TEST(AnthropicStream, AFailureEndsTheStreamWithAnErrorEvent) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("partial")));
  const std::vector<SseEvent> failed = stream.Fail({504, "server_error", "timeout", "generation exceeded", {}});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].event, "error");
  EXPECT_EQ(json::parse(failed[0].data), json::parse(R"({"type": "error",
      "error": {"type": "api_error", "message": "generation exceeded"}})"));
  EXPECT_TRUE(stream.Finish({"partial", "", {}}, End()).empty());
  EXPECT_TRUE(stream.Fail({500, "", "", "again", {}}).empty());
  AnthropicStream busy(Context());
  EXPECT_EQ(json::parse(busy.Fail({503, "", "", "busy", {}})[0].data)["error"]["type"], "overloaded_error");
}

TEST(AnthropicStream, BrokenUtf8FromTheModelIsReplacedNotThrown) {
  AnthropicStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("a\xE2\x82")));
  rec.Add(stream.Finish({"a\xE2\x82", "", {}}, End()));
  EXPECT_EQ(rec.message["content"][0]["text"], "a\uFFFD");
}

// What the stream's events look like on the wire.
TEST(AnthropicStream, EventsGoOutNamedAndWithoutDone) {
  RecordingResponder out;
  SseWriter sse(out);
  AnthropicStream stream(Context());
  for (const SseEvent& e : stream.Begin()) ASSERT_TRUE(sse.Event(e.event, e.data));
  for (const SseEvent& e : stream.Finish({"hi", "", {}}, End())) ASSERT_TRUE(sse.Event(e.event, e.data));
  ASSERT_TRUE(sse.End());
  EXPECT_TRUE(out.ended());
  EXPECT_EQ(out.body().rfind("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{", 0), 0u) << out.body();
  EXPECT_NE(out.body().find("\n\nevent: content_block_start\ndata: {"), std::string::npos);
  EXPECT_NE(out.body().find("\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), std::string::npos);
  EXPECT_EQ(out.body().find("[DONE]"), std::string::npos);
}

}  // namespace
}  // namespace llmd::http
