#include "http/responses/responses_api.h"

#include <gtest/gtest.h>

#include "http/api_error.h"
#include "http/recording_responder.h"
#include "http/sse_writer.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace llmd::http {
namespace {

using nlohmann::json;

ResponsesRequest Parse(const std::string& body) {
  auto r = ParseResponsesRequest(body);
  EXPECT_TRUE(r.has_value()) << r.error().ToString() << "\n" << body;
  return r.has_value() ? *r : ResponsesRequest{};
}

// ---------------------------------------------------------------------------------------
// The request.

TEST(ResponsesRequest, ParsesEveryField) {
  ResponsesRequest r = Parse(R"({
    "model": "qwen", "instructions": "be brief", "max_output_tokens": 64, "temperature": 0.7,
    "top_p": 0.9, "stream": true, "parallel_tool_calls": false, "store": false, "truncation": "disabled",
    "service_tier": "auto", "metadata": {"k": "v"}, "user": "u1", "prompt_cache_key": "ignored",
    "max_tool_calls": 1, "include": ["reasoning.encrypted_content"],
    "reasoning": {"effort": "high", "summary": "auto"},
    "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": true},
             "verbosity": "medium"},
    "tools": [{"type": "function", "name": "get_weather", "description": "weather now",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true},
              {"type": "function", "name": "get_time"}],
    "tool_choice": {"type": "function", "name": "get_weather"},
    "input": [
      {"role": "developer", "content": "use tools"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi "},
                                                      {"type": "input_text", "text": "there"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]},
      {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "sure", "annotations": [], "logprobs": []}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
       "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
      {"role": "user", "content": "thanks"}
    ]})");
  EXPECT_TRUE(r.chat);
  ASSERT_EQ(r.messages.size(), 6u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be brief");
  EXPECT_EQ(r.messages[1].role, "system");
  EXPECT_EQ(r.messages[1].content, "use tools");
  EXPECT_EQ(r.messages[2].role, "user");
  EXPECT_EQ(r.messages[2].content, "hi there");
  EXPECT_EQ(r.messages[3].role, "assistant");
  EXPECT_EQ(r.messages[3].content, "sure");
  ASSERT_EQ(r.messages[3].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[3].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[3].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[3].tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.messages[4].role, "tool");
  EXPECT_EQ(r.messages[4].content, "sunny");
  EXPECT_EQ(r.messages[4].tool_call_id, "call_1");
  EXPECT_EQ(r.messages[5].role, "user");
  EXPECT_EQ(r.messages[5].content, "thanks");

  EXPECT_EQ(*r.model, "qwen");
  EXPECT_EQ(*r.max_tokens, 64u);
  EXPECT_FLOAT_EQ(*r.temperature, 0.7f);
  EXPECT_FLOAT_EQ(*r.top_p, 0.9f);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.enable_thinking, true);
  EXPECT_EQ(r.top_logprobs, -1);
  ASSERT_EQ(r.format.tools.size(), 2u);
  EXPECT_EQ(r.format.tools[0].name, "get_weather");
  EXPECT_EQ(r.format.tools[0].description, "weather now");
  EXPECT_EQ(json::parse(r.format.tools[0].parameters),
            json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}})"));
  EXPECT_EQ(r.format.tools[1].name, "get_time");
  EXPECT_EQ(r.format.tools[1].description, "");
  EXPECT_EQ(r.format.tools[1].parameters, "");
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kNamed);
  EXPECT_EQ(r.format.tool_name, "get_weather");
  EXPECT_FALSE(r.format.parallel_tool_calls);
  EXPECT_EQ(json::parse(r.format.json_schema), json::parse(R"({"type":"object"})"));

  EXPECT_EQ(json::parse(r.echo_json), json::parse(R"({
    "instructions": "be brief", "max_output_tokens": 64, "temperature": 0.7, "top_p": 0.9,
    "tools": [{"type": "function", "name": "get_weather", "description": "weather now",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true},
              {"type": "function", "name": "get_time", "description": null, "parameters": null, "strict": null}],
    "tool_choice": {"type": "function", "name": "get_weather"}, "parallel_tool_calls": false, "max_tool_calls": 1,
    "text": {"format": {"type": "json_schema", "name": "w", "schema": {"type": "object"}, "strict": true},
             "verbosity": "medium"},
    "reasoning": {"effort": "high", "summary": "auto"}, "top_logprobs": 0,
    "metadata": {"k": "v"}, "user": "u1", "store": false, "previous_response_id": null})"));
  EXPECT_FALSE(r.store);
}

TEST(ResponsesRequest, AStringInputIsOneUserTurnWithTheDefaults) {
  ResponsesRequest r = Parse(R"({"input": "hello"})");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "hello");
  EXPECT_FALSE(r.model.has_value());
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.temperature.has_value());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.enable_thinking.has_value());  // the model's default
  EXPECT_TRUE(r.format.plain());
  EXPECT_TRUE(r.format.parallel_tool_calls);
  EXPECT_EQ(r.format.tool_choice, engine::ToolChoice::kAuto);
  EXPECT_EQ(r.top_logprobs, -1);
  EXPECT_EQ(json::parse(r.echo_json), json::parse(R"({
    "instructions": null, "max_output_tokens": null, "temperature": null, "top_p": null, "tools": [],
    "tool_choice": "auto", "parallel_tool_calls": true, "text": {"format": {"type": "text"}},
    "reasoning": {"effort": null, "summary": null}, "top_logprobs": 0, "metadata": {},
    "store": true, "previous_response_id": null})"));
  EXPECT_TRUE(r.store) << "OpenAI's default";
  EXPECT_EQ(json::parse(r.items_json), json::parse(R"([{"type": "message", "role": "user", "content": "hello"}])"));
}

TEST(ResponsesRequest, NullMeansAbsent) {
  ResponsesRequest r = Parse(R"({"input": "x", "instructions": null, "max_output_tokens": null, "tools": null,
      "tool_choice": null, "text": null, "reasoning": null, "previous_response_id": null, "store": null,
      "background": null, "conversation": null, "include": null, "metadata": null, "truncation": null})");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_TRUE(r.format.plain());
}

// previous_response_id: the stored conversation (its items) comes first, then the new input;
// the previous instructions are not in it, this request's come first.
TEST(ResponsesRequest, APreviousResponsesConversationComesBeforeTheNewInput) {
  const std::string stored = R"([
      {"type": "message", "role": "user", "content": "first question"},
      {"type": "reasoning", "id": "rs_p", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]},
      {"type": "message", "id": "msg_p", "status": "completed", "role": "assistant",
       "content": [{"type": "output_text", "text": "first answer", "annotations": [], "logprobs": []}]}])";
  std::vector<std::string> asked;
  const PreviousResponseLookup lookup = [&](const std::string& id) -> Result<std::string> {
    asked.push_back(id);
    return stored;
  };
  auto r = ParseResponsesRequest(
      R"({"input": "second question", "instructions": "be brief", "previous_response_id": "resp_p"})", lookup);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(asked, std::vector<std::string>{"resp_p"});
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[0].content, "be brief");
  EXPECT_EQ(r->messages[1].content, "first question");
  EXPECT_EQ(r->messages[2].role, "assistant");
  EXPECT_EQ(r->messages[2].content, "first answer");
  EXPECT_EQ(r->messages[3].role, "user");
  EXPECT_EQ(r->messages[3].content, "second question");
  EXPECT_EQ(json::parse(r->echo_json)["previous_response_id"], "resp_p");
  // The conversation a stored follow-up keeps: the stored items, then the new input (no instructions).
  json items = json::parse(r->items_json);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[2]["id"], "msg_p");
  EXPECT_EQ(items[3], json::parse(R"({"type": "message", "role": "user", "content": "second question"})"));

  // The same as sending the whole conversation at once.
  ResponsesRequest whole = Parse(R"({"instructions": "be brief", "input": [
      {"role": "user", "content": "first question"}, {"role": "assistant", "content": "first answer"},
      {"role": "user", "content": "second question"}]})");
  ASSERT_EQ(whole.messages.size(), r->messages.size());
  for (size_t i = 0; i < whole.messages.size(); ++i) {
    EXPECT_EQ(whole.messages[i].role, r->messages[i].role) << i;
    EXPECT_EQ(whole.messages[i].content, r->messages[i].content) << i;
  }
}

// A function-call loop over stored responses: the outputs answer the stored calls.
TEST(ResponsesRequest, AFollowUpAnswersThePreviousResponsesCalls) {
  const PreviousResponseLookup lookup = [](const std::string&) -> Result<std::string> {
    return std::string(R"([{"type": "message", "role": "user", "content": "weather?"},
        {"type": "function_call", "id": "fc_p_0", "call_id": "call_9", "name": "f", "arguments": "{}",
         "status": "completed"}])");
  };
  auto r = ParseResponsesRequest(R"({"previous_response_id": "resp_p", "tools": [{"type": "function", "name": "f"}],
      "input": [{"type": "function_call_output", "call_id": "call_9", "output": "sunny"}]})", lookup);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->messages.size(), 3u);
  ASSERT_EQ(r->messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[1].tool_calls[0].id, "call_9");
  EXPECT_EQ(r->messages[2].role, "tool");
  EXPECT_EQ(r->messages[2].tool_call_id, "call_9");

  // Leaving the stored call unanswered is refused, as in a whole input.
  auto unanswered = ParseResponsesRequest(
      R"({"previous_response_id": "resp_p", "tools": [{"type": "function", "name": "f"}], "input": "and?"})", lookup);
  ASSERT_FALSE(unanswered.has_value());
  EXPECT_NE(unanswered.error().message().find("call_id 'call_9' but no function_call_output"), std::string::npos)
      << unanswered.error().message();
}

TEST(ResponsesRequest, TheLookupsErrorIsTheRequestsError) {
  const PreviousResponseLookup lookup = [](const std::string& id) -> Result<std::string> {
    return NotFoundError("Previous response with id '" + id + "' not found.");
  };
  auto r = ParseResponsesRequest(R"({"input": "x", "previous_response_id": "resp_gone"})", lookup);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.error().message(), "Previous response with id 'resp_gone' not found.");
  // Without previous_response_id the lookup is never asked.
  EXPECT_TRUE(ParseResponsesRequest(R"({"input": "x"})", lookup).has_value());
}

TEST(ResponsesRequest, ParallelCallsJoinTheirAssistantTurnAndEachOutputIsAToolMessage) {
  ResponsesRequest r = Parse(R"({"tools": [{"type": "function", "name": "f"}], "input": [
      {"role": "user", "content": "go"},
      {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{\"n\":1}"},
      {"type": "function_call", "call_id": "b", "name": "f", "arguments": ""},
      {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "one"}]},
      {"type": "function_call_output", "call_id": "b", "output": "two"}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1].role, "assistant");
  EXPECT_EQ(r.messages[1].content, "");
  ASSERT_EQ(r.messages[1].tool_calls.size(), 2u);
  EXPECT_EQ(r.messages[1].tool_calls[1].id, "b");
  EXPECT_EQ(r.messages[1].tool_calls[1].arguments, "{}");  // no arguments
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].content, "one");
  EXPECT_EQ(r.messages[2].tool_call_id, "a");
  EXPECT_EQ(r.messages[3].tool_call_id, "b");
}

TEST(ResponsesRequest, ReasoningEffortSwitchesThinking) {
  for (const char* off : {"none", "minimal"}) {
    EXPECT_EQ(Parse(std::string(R"({"input":"x","reasoning":{"effort":")") + off + "\"}}").enable_thinking, false);
  }
  for (const char* on : {"low", "medium", "high", "xhigh", "max"}) {
    EXPECT_EQ(Parse(std::string(R"({"input":"x","reasoning":{"effort":")") + on + "\"}}").enable_thinking, true);
  }
  EXPECT_FALSE(Parse(R"({"input":"x","reasoning":{"summary":"auto"}})").enable_thinking.has_value());
}

// truncation:"auto" is overflow drop_oldest (repeated in the Response); "disabled" refuses
// what does not fit; none leaves it to the X-Llmd-Overflow header (else refused).
TEST(ResponsesRequest, TruncationAutoDropsTheOldestTurns) {
  const ResponsesRequest automatic = Parse(R"({"input":"x","truncation":"auto"})");
  EXPECT_EQ(automatic.overflow, engine::ContextOverflow::kDropOldest);
  EXPECT_EQ(json::parse(automatic.echo_json)["truncation"], "auto");
  EXPECT_EQ(Parse(R"({"input":"x","truncation":"disabled"})").overflow, engine::ContextOverflow::kError);
  EXPECT_FALSE(Parse(R"({"input":"x"})").overflow.has_value());
}

TEST(ResponsesRequest, TextFormats) {
  EXPECT_EQ(Parse(R"({"input":"x","text":{"format":{"type":"text"}}})").format.json_schema, "");
  EXPECT_EQ(json::parse(Parse(R"({"input":"x","text":{"format":{"type":"json_object"}}})").format.json_schema),
            json::parse(R"({"type":"object"})"));
}

TEST(ResponsesRequest, ToolChoiceStrings) {
  const std::string tools = R"("tools":[{"type":"function","name":"f"}])";
  EXPECT_EQ(Parse(R"({"input":"x",)" + tools + R"(,"tool_choice":"auto"})").format.tool_choice,
            engine::ToolChoice::kAuto);
  EXPECT_EQ(Parse(R"({"input":"x",)" + tools + R"(,"tool_choice":"none"})").format.tool_choice,
            engine::ToolChoice::kNone);
  EXPECT_EQ(Parse(R"({"input":"x",)" + tools + R"(,"tool_choice":"required"})").format.tool_choice,
            engine::ToolChoice::kRequired);
  EXPECT_EQ(Parse(R"({"input":"x","tool_choice":"none"})").format.tool_choice, engine::ToolChoice::kNone);
  EXPECT_TRUE(Parse(R"({"input":"x","tools":[]})").format.tools.empty());
}

TEST(ResponsesRequest, AToolChoiceNoToolSatisfiesIsRefusedWithItsParam) {
  // The error goes out in OpenAI's shape (as chat/completions'), param "tool_choice".
  for (const char* body : {R"({"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}})",
                           R"({"input":"x","tool_choice":"required"})"}) {
    auto r = ParseResponsesRequest(body);
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.error().reason(), ErrorReason::kToolNotOffered) << body;
    EXPECT_STREQ(ApiErrorOf(r.error()).param, "tool_choice") << body;
  }
}

TEST(ResponsesRequest, LogprobsComeWithIncludeAndTurnThinkingOff) {
  ResponsesRequest r = Parse(R"({"input":"x","include":["message.output_text.logprobs"],"top_logprobs":5})");
  EXPECT_EQ(r.top_logprobs, 5);
  EXPECT_EQ(r.enable_thinking, false);
  EXPECT_EQ(json::parse(r.echo_json)["top_logprobs"], 5);
  EXPECT_EQ(Parse(R"({"input":"x","include":["message.output_text.logprobs"]})").top_logprobs, 0);
  EXPECT_EQ(Parse(R"({"input":"x","include":["message.output_text.logprobs"],"reasoning":{"effort":"none"}})")
                .top_logprobs, 0);
  // As on OpenAI, top_logprobs alone asks for nothing.
  EXPECT_EQ(Parse(R"({"input":"x","top_logprobs":3})").top_logprobs, -1);
}

TEST(ResponsesRequest, RefusesWhatItCannotHonourWithTheFieldNamed) {
  struct Case {
    const char* body;
    const char* says;
  } cases[] = {
      {"", "not valid JSON"},
      {"[1]", "JSON object"},
      {"{}", "'input' is required"},
      {R"({"input":5})", "'input' must be a string or a non-empty array"},
      {R"({"input":[]})", "'input' must be a string or a non-empty array"},
      {R"({"input":[5]})", "'input[0]' must be an object"},
      {R"({"input":[{"content":"x"}]})", "'input[0].role' must be"},
      {R"({"input":[{"role":"tool","content":"x"}]})", "'input[0].role' must be one of user, system"},
      {R"({"input":[{"role":"user"}]})", "'input[0].content' must be a string or an array of text parts"},
      {R"({"input":[{"role":"user","content":5}]})", "'input[0].content' must be"},
      {R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"http://x"}]}]})",
       "'input[0].content[0]' is an input_image: llmd serves text only"},
      {R"({"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]})", "input_file: llmd serves text"},
      {R"({"input":[{"role":"user","content":[{"type":"input_audio"}]}]})", "input_audio: llmd serves text only"},
      {R"({"input":[{"role":"user","content":[5]}]})", "'input[0].content[0]' must be an object"},
      {R"({"input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]})",
       "'input[0].content[0].type' must be input_text or output_text (got 'refusal')"},
      {R"({"input":[{"role":"user","content":[{"type":"input_text"}]}]})", "'input[0].content[0].text' must be a string"},
      {R"({"input":[{"type":5}]})", "'input[0].type' must be a string"},
      {R"({"input":[{"type":"item_reference","id":"msg_1"}]})", "'input[0]' is an item_reference: llmd keeps no items"},
      {R"({"input":[{"type":"web_search_call","id":"ws"}]})", "'input[0].type' 'web_search_call' is not supported"},
      {R"({"input":[{"type":"function_call","name":"f","arguments":"{}"}]})", "'input[0].call_id' must be a non-empty"},
      {R"({"input":[{"type":"function_call","call_id":"","name":"f","arguments":"{}"}]})", "'input[0].call_id'"},
      {R"({"input":[{"type":"function_call","call_id":"a","arguments":"{}"}]})", "'input[0].name' must be a non-empty"},
      {R"({"input":[{"type":"function_call","call_id":"a","name":"f","arguments":{}}]})",
       "'input[0].arguments' must be a string (JSON text)"},
      {R"({"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{"}]})",
       "'input[0].arguments' must be JSON text"},
      {R"({"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},
                    {"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]})",
       "'input[1].call_id' 'a' is used by an earlier function_call"},
      {R"({"input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"}]})",
       "function_call with call_id 'a' but no function_call_output"},
      {R"({"input":[{"type":"function_call_output","call_id":"zz","output":"x"}]})",
       "'input[0].call_id' 'zz' answers no function_call before it"},
      {R"({"input":[{"type":"function_call_output","output":"x"}]})", "'input[0].call_id' must be a non-empty"},
      {R"({"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},
                    {"type":"function_call_output","call_id":"a","output":"x"},
                    {"type":"function_call_output","call_id":"a","output":"y"}]})",
       "'input[2].call_id' 'a' was answered already"},
      {R"({"input":[{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},
                    {"type":"function_call_output","call_id":"a","output":5}]})", "'input[1].output' must be"},
      {R"({"input":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]})",
       "the last message must not be the assistant's (llmd does not continue a reply)"},
      {R"({"input":[{"type":"reasoning","summary":[]}]})", "'input' has no message"},
      {R"({"input":"x","instructions":5})", "'instructions' must be a string"},
      {R"({"input":"x","previous_response_id":"resp_1"})",
       "'previous_response_id' cannot be used here: there is no response store"},
      {R"({"input":"x","previous_response_id":5})", "'previous_response_id' must be a string"},
      {R"({"input":"x","conversation":"conv_1"})",
       "'conversation' is not supported: llmd has no Conversations API; chain responses with previous_response_id"},
      {R"({"input":"x","prompt":{"id":"p"}})", "'prompt' (a stored prompt template) is not supported"},
      {R"({"input":"x","store":"no"})", "'store' must be true or false"},
      {R"({"input":"x","background":true})", "'background': true is not supported"},
      {R"({"input":"x","truncation":"sometimes"})", "'truncation' must be one of auto, disabled"},
      {R"({"input":"x","service_tier":"scale"})", "'service_tier' must be one of auto, default, flex, priority"},
      {R"({"input":"x","context_management":[{"type":"compaction"}]})", "'context_management' is not supported"},
      {R"({"input":"x","moderation":{"model":"m"}})", "'moderation' is not supported"},
      {R"({"input":"x","model":5})", "'model' must be a string"},
      {R"({"input":"x","max_output_tokens":"10"})", "'max_output_tokens' must be an integer"},
      {R"({"input":"x","max_output_tokens":-1})", "'max_output_tokens' must be in"},
      {R"({"input":"x","max_output_tokens":1e30})", "'max_output_tokens' must be an integer"},
      {R"({"input":"x","max_output_tokens":18446744073709551615})", "'max_output_tokens' must be in"},
      {R"({"input":"x","temperature":"hot"})", "'temperature' must be a number"},
      {R"({"input":"x","temperature":3})", "'temperature' must be in"},
      {R"({"input":"x","top_p":1.5})", "'top_p' must be in"},
      {R"({"input":"x","stream":"yes"})", "'stream' must be true or false"},
      {R"({"input":"x","tools":{}})", "'tools' must be an array"},
      {R"({"input":"x","tools":[5]})", "'tools[0]' must be an object"},
      {R"({"input":"x","tools":[{"name":"f"}]})", "'tools[0].type' must be a string"},
      {R"({"input":"x","tools":[{"type":"web_search"}]})",
       "'tools[0]' is a 'web_search' tool, which llmd does not have (only function tools)"},
      {R"({"input":"x","tools":[{"type":"function","name":"f"},{"type":"file_search"}]})", "'tools[1]' is a 'file_search'"},
      {R"({"input":"x","tools":[{"type":"function"}]})", "'tools[0].name' must be a non-empty string"},
      {R"({"input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]})",
       "'tools[1].name' 'f' is used twice"},
      {R"({"input":"x","tools":[{"type":"function","name":"f","description":5}]})", "'tools[0].description' must be"},
      {R"({"input":"x","tools":[{"type":"function","name":"f","parameters":"x"}]})", "'tools[0].parameters' must be"},
      {R"({"input":"x","tools":[{"type":"function","name":"f","strict":"yes"}]})", "'tools[0].strict' must be"},
      {R"({"input":"x","tool_choice":5})", "'tool_choice' must be a string or an object"},
      {R"({"input":"x","tool_choice":"maybe"})", "'tool_choice' must be auto, none, required"},
      {R"({"input":"x","tool_choice":"required"})", "'tool_choice' asks for a tool call, but 'tools' is empty"},
      {R"({"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}})",
       "'tool_choice.name' 'g' is not in 'tools'"},
      {R"({"input":"x","tool_choice":{"type":"function","name":"g"}})",
       "'tool_choice' asks for a tool call, but 'tools' is empty"},
      {R"({"input":"x","tool_choice":{"type":"function"}})", "'tool_choice.name' must be a non-empty string"},
      {R"({"input":"x","tool_choice":{"name":"f"}})", "'tool_choice.type' must be a string"},
      {R"({"input":"x","tool_choice":{"type":"file_search"}})", "'tool_choice' of type 'file_search' is not supported"},
      {R"({"input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}})",
       "'tool_choice' of type 'allowed_tools' is not supported"},
      {R"({"input":"x","parallel_tool_calls":"no"})", "'parallel_tool_calls' must be true or false"},
      {R"({"input":"x","text":5})", "'text' must be an object"},
      {R"({"input":"x","text":{"format":"json"}})", "'text.format' must be an object"},
      {R"({"input":"x","text":{"format":{}}})", "'text.format.type' must be"},
      {R"({"input":"x","text":{"format":{"type":"xml"}}})", "'text.format.type' must be one of text, json_object"},
      {R"({"input":"x","text":{"format":{"type":"json_schema","schema":{}}}})", "'text.format.name' must be"},
      {R"({"input":"x","text":{"format":{"type":"json_schema","name":"n"}}})", "'text.format.schema' must be an object"},
      {R"({"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{},"strict":1}}})",
       "'text.format.strict' must be true or false"},
      {R"({"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{},"description":1}}})",
       "'text.format.description' must be a string"},
      {R"({"input":"x","text":{"verbosity":"low"}})", "'text.verbosity' 'low' is not supported"},
      {R"({"input":"x","text":{"verbosity":"chatty"}})", "'text.verbosity' must be one of low, medium, high"},
      {R"({"input":"x","reasoning":"high"})", "'reasoning' must be an object"},
      {R"({"input":"x","reasoning":{"effort":"extreme"}})", "'reasoning.effort' must be one of none, minimal"},
      {R"({"input":"x","reasoning":{"summary":"detailed"}})", "'reasoning.summary' 'detailed' is not supported"},
      {R"({"input":"x","reasoning":{"generate_summary":"concise"}})", "'reasoning.generate_summary' 'concise'"},
      {R"({"input":"x","reasoning":{"context":"all_turns"}})", "'reasoning.context' \"all_turns\" is not supported"},
      {R"({"input":"x","reasoning":{"mode":"pro"}})", "'reasoning.mode' 'pro' is not supported"},
      {R"({"input":"x","include":"message.output_text.logprobs"})", "'include' must be an array of strings"},
      {R"({"input":"x","include":[5]})", "'include[0]' must be a string"},
      {R"({"input":"x","include":["everything"]})", "'include[0]' 'everything' is not a known include value"},
      {R"({"input":"x","include":["message.output_text.logprobs"],"tools":[{"type":"function","name":"f"}]})",
       "message.output_text.logprobs cannot be used with 'tools'"},
      {R"({"input":"x","include":["message.output_text.logprobs"],"reasoning":{"effort":"low"}})",
       "message.output_text.logprobs cannot be used with 'reasoning'"},
      {R"({"input":"x","top_logprobs":21})", "'top_logprobs' must be in 0..20"},
      {R"({"input":"x","metadata":5})", "'metadata' must be an object of strings"},
      {R"({"input":"x","metadata":{"a":1}})", "'metadata.a' must be a string"},
      {R"({"input":"x","user":5})", "'user' must be a string"},
  };
  for (const auto& c : cases) {
    auto r = ParseResponsesRequest(c.body);
    ASSERT_FALSE(r.has_value()) << c.body;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(r.error().message().find(c.says), std::string::npos)
        << c.body << "\n  said: " << r.error().message() << "\n  want: " << c.says;
  }
}

// ---------------------------------------------------------------------------------------
// The finished Response.

ResponseContext Context(const std::string& echo_json = "{}") {
  return {"resp_abc", 1700000000, "qwen", echo_json};
}

engine::GenerationStats Stats(engine::FinishReason finish = engine::FinishReason::kStop) {
  engine::GenerationStats st;
  st.prompt_tokens = 10;
  st.cached_tokens = 4;
  st.generated_tokens = 3;
  st.finish_reason = finish;
  return st;
}

TEST(ResponsesRender, ATextReplyIsTheWholeResponseObject) {
  const std::string echo = Parse(R"({"input":"hi","instructions":"be brief","temperature":0.5,
                                      "metadata":{"k":"v"}})").echo_json;
  engine::ParsedReply reply{"Hello!", "", {}};
  const json got = json::parse(RenderResponse(Context(echo), reply, Stats(), "completed"));
  EXPECT_EQ(got, json::parse(R"({
    "id": "resp_abc", "access_programs": null, "object": "response", "created_at": 1700000000,
    "status": "completed",
    "background": false, "error": null, "incomplete_details": null, "instructions": "be brief",
    "max_output_tokens": null, "max_tool_calls": null, "model": "qwen",
    "output": [{"id": "msg_abc", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello!", "annotations": [], "logprobs": []}]}],
    "parallel_tool_calls": true, "previous_response_id": null,
    "reasoning": {"effort": null, "summary": null}, "service_tier": "default", "store": true,
    "temperature": 0.5, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
    "top_logprobs": 0, "top_p": null, "truncation": "disabled",
    "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4, "cache_write_tokens": 0},
              "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13},
    "user": null, "metadata": {"k": "v"}})"))
      << got.dump(2);
  EXPECT_FALSE(got.contains("output_text"));  // the SDK computes it
}

// llmd's usage extension: the turns truncation:"auto" dropped, only when it dropped some.
TEST(ResponsesRender, TheUsageSaysWhatTruncationDropped) {
  const std::string echo = Parse(R"({"input":"hi","truncation":"auto"})").echo_json;
  engine::GenerationStats st = Stats();
  st.dropped_tokens = 120;
  st.dropped_turns = 2;
  const json got = json::parse(RenderResponse(Context(echo), engine::ParsedReply{"Hi", "", {}}, st, "completed"));
  EXPECT_EQ(got["truncation"], "auto");
  EXPECT_EQ(got["usage"]["dropped_tokens"], 120);
  EXPECT_EQ(got["usage"]["dropped_turns"], 2);
  const json none = json::parse(RenderResponse(Context(echo), engine::ParsedReply{"Hi", "", {}}, Stats(), "completed"));
  EXPECT_FALSE(none["usage"].contains("dropped_turns"));
}

TEST(ResponsesRender, ReasoningAndCallsAreItemsInOrder) {
  engine::ParsedReply reply{"", "The user wants weather.",
                            {{"call_1", "get_weather", R"({"city":"Paris"})"}, {"", "get_time", "{}"}}};
  const json got = json::parse(RenderResponse(Context(), reply, Stats(), "completed"));
  EXPECT_EQ(got["output"], json::parse(R"([
    {"id": "rs_abc", "type": "reasoning", "summary": [],
     "content": [{"type": "reasoning_text", "text": "The user wants weather."}], "status": "completed"},
    {"id": "fc_abc_0", "type": "function_call", "status": "completed", "arguments": "{\"city\":\"Paris\"}",
     "call_id": "call_1", "name": "get_weather"},
    {"id": "fc_abc_1", "type": "function_call", "status": "completed", "arguments": "{}",
     "call_id": "call_abc_1", "name": "get_time"}])"))
      << got["output"].dump(2);
}

TEST(ResponsesRender, TextBeforeACallIsAMessageFirst) {
  engine::ParsedReply reply{"Let me check.", "", {{"call_1", "f", "{}"}}};
  const json got = json::parse(RenderResponse(Context(), reply, Stats(), "completed"));
  ASSERT_EQ(got["output"].size(), 2u);
  EXPECT_EQ(got["output"][0]["type"], "message");
  EXPECT_EQ(got["output"][0]["content"][0]["text"], "Let me check.");
  EXPECT_EQ(got["output"][1]["type"], "function_call");
}

TEST(ResponsesRender, AnIncompleteReplySaysWhy) {
  engine::ParsedReply reply{"Hel", "", {}};
  engine::GenerationStats cut = Stats(engine::FinishReason::kLength);
  EXPECT_EQ(ResponseStatusFor(cut), "incomplete");
  EXPECT_EQ(ResponseStatusFor(Stats()), "completed");
  json got = json::parse(RenderResponse(Context(), reply, cut, ResponseStatusFor(cut)));
  EXPECT_EQ(got["status"], "incomplete");
  EXPECT_EQ(got["incomplete_details"], json::parse(R"({"reason": "max_output_tokens"})"));
  EXPECT_EQ(got["output"][0]["status"], "incomplete");
  // Not cut by length: the guard refused the answer.
  got = json::parse(RenderResponse(Context(), {}, Stats(), "incomplete"));
  EXPECT_EQ(got["incomplete_details"], json::parse(R"({"reason": "content_filter"})"));
}

TEST(ResponsesRender, AnEmptyReplyStillHasItsMessage) {
  const json got = json::parse(RenderResponse(Context(), {}, Stats(), "completed"));
  ASSERT_EQ(got["output"].size(), 1u);
  EXPECT_EQ(got["output"][0]["content"][0]["text"], "");
}

TEST(ResponsesRender, LogprobsCarryTheirBytesAndSurviveBrokenUtf8) {
  std::vector<engine::TokenLogprob> logprobs = {{"Hi", -0.5f, {{"Hi", -0.5f}, {"Hey", -1.0f}}},
                                                {"\xE2\x82", -0.25f, {}}};  // half a character
  const json got = json::parse(RenderResponse(Context(), {"Hi\xE2\x82", "", {}}, Stats(), "completed", logprobs));
  EXPECT_EQ(got["output"][0]["content"][0]["logprobs"], json::parse(R"([
    {"token": "Hi", "bytes": [72, 105], "logprob": -0.5,
     "top_logprobs": [{"token": "Hi", "bytes": [72, 105], "logprob": -0.5},
                      {"token": "Hey", "bytes": [72, 101, 121], "logprob": -1.0}]},
    {"token": "\uFFFD", "bytes": [226, 130], "logprob": -0.25, "top_logprobs": []}])"));
}

TEST(ResponsesRender, ABadEchoFallsBackToTheDefaults) {
  const json got = json::parse(RenderResponse(Context("not json"), {"x", "", {}}, Stats(), "completed"));
  EXPECT_EQ(got["tools"], json::array());
  EXPECT_EQ(got["tool_choice"], "auto");
}

// ---------------------------------------------------------------------------------------
// The stream.

struct Recorder {
  std::vector<std::string> types;
  std::vector<json> data;
  void Add(const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      json d = json::parse(e.data);
      EXPECT_EQ(d["type"], e.event);
      EXPECT_EQ(d["sequence_number"], data.size()) << e.event;
      types.push_back(e.event);
      data.push_back(std::move(d));
    }
  }
  const json& Last(const std::string& type) const {
    for (size_t i = data.size(); i-- > 0;) {
      if (types[i] == type) return data[i];
    }
    static const json none;
    ADD_FAILURE() << "no " << type;
    return none;
  }
};

ReplyDelta Content(const std::string& text) { return {"", text, {}}; }
ReplyDelta Reasoning(const std::string& text) { return {text, "", {}}; }

TEST(ResponsesStream, ATextReplyInOrder) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Begin());
  rec.Add(stream.Next(Content("Hel")));
  rec.Add(stream.Next(ReplyDelta{}));  // nothing new: no event
  rec.Add(stream.Next(Content("lo")));
  engine::ParsedReply reply{"Hello", "", {}};
  rec.Add(stream.Finish(reply, Stats(), "completed"));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "response.created", "response.in_progress", "response.output_item.added",
                           "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                           "response.output_text.done", "response.content_part.done", "response.output_item.done",
                           "response.completed"}));
  const json& created = rec.data[0]["response"];
  EXPECT_EQ(created["status"], "in_progress");
  EXPECT_EQ(created["output"], json::array());
  EXPECT_TRUE(created["usage"].is_null());
  EXPECT_EQ(rec.data[2]["item"], json::parse(R"({"id": "msg_abc", "type": "message", "status": "in_progress",
                                                  "role": "assistant", "content": []})"));
  EXPECT_EQ(rec.data[2]["output_index"], 0);
  EXPECT_EQ(rec.data[3]["part"], json::parse(R"({"type": "output_text", "text": "", "annotations": [], "logprobs": []})"));
  EXPECT_EQ(rec.data[4], json::parse(R"({"type": "response.output_text.delta", "sequence_number": 4,
      "item_id": "msg_abc", "output_index": 0, "content_index": 0, "delta": "Hel", "logprobs": []})"));
  EXPECT_EQ(rec.data[6]["text"], "Hello");
  EXPECT_EQ(rec.data[7]["part"]["text"], "Hello");
  EXPECT_EQ(rec.data[8]["item"]["status"], "completed");
  // The final object is the one a non-streamed request gets.
  EXPECT_EQ(rec.data[9]["response"], json::parse(RenderResponse(Context(), reply, Stats(), "completed")));
  EXPECT_TRUE(stream.Next(Content("late")).empty());
  EXPECT_TRUE(stream.Finish(reply, Stats(), "completed").empty());
}

TEST(ResponsesStream, ReasoningThenTextAndTheHeldBackRest) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Reasoning("Let me")));  // Begin is implied
  rec.Add(stream.Next(Reasoning(" think")));
  rec.Add(stream.Next(Content("Answer")));
  engine::ParsedReply reply{"Answer!", "Let me think", {}};  // "!" was held back
  rec.Add(stream.Finish(reply, Stats(), "completed"));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "response.created", "response.in_progress",
                           "response.output_item.added", "response.content_part.added",
                           "response.reasoning_text.delta", "response.reasoning_text.delta",
                           "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
                           "response.output_item.added", "response.content_part.added",
                           "response.output_text.delta", "response.output_text.delta",
                           "response.output_text.done", "response.content_part.done", "response.output_item.done",
                           "response.completed"}));
  EXPECT_EQ(rec.data[2]["item"], json::parse(R"({"id": "rs_abc", "type": "reasoning", "summary": [], "content": [],
                                                  "status": "in_progress"})"));
  EXPECT_EQ(rec.data[3]["part"], json::parse(R"({"type": "reasoning_text", "text": ""})"));
  EXPECT_EQ(rec.data[4], json::parse(R"({"type": "response.reasoning_text.delta", "sequence_number": 4,
      "item_id": "rs_abc", "output_index": 0, "content_index": 0, "delta": "Let me"})"));
  EXPECT_EQ(rec.data[6]["text"], "Let me think");
  EXPECT_EQ(rec.data[9]["output_index"], 1);
  EXPECT_EQ(rec.data[9]["item"]["id"], "msg_abc");
  EXPECT_EQ(rec.data[12]["delta"], "!");
  EXPECT_EQ(rec.data[13]["text"], "Answer!");
  EXPECT_EQ(rec.data[16]["response"], json::parse(RenderResponse(Context(), reply, Stats(), "completed")));
}

TEST(ResponsesStream, TextThenToolCallsFromReplyDeltas) {
  int ids = 0;
  ReplyDeltas deltas([&] { return "call_" + std::to_string(++ids); });
  ResponsesStream stream(Context());
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
  rec.Add(stream.Finish(reply, Stats(), "completed"));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "response.created", "response.in_progress",
                           "response.output_item.added", "response.content_part.added", "response.output_text.delta",
                           "response.output_text.done", "response.content_part.done", "response.output_item.done",
                           "response.output_item.added", "response.function_call_arguments.delta",
                           "response.function_call_arguments.delta", "response.function_call_arguments.done",
                           "response.output_item.done",
                           "response.output_item.added", "response.function_call_arguments.delta",
                           "response.function_call_arguments.done", "response.output_item.done",
                           "response.completed"}));
  EXPECT_EQ(rec.data[8]["output_index"], 1);
  EXPECT_EQ(rec.data[8]["item"], json::parse(R"({"id": "fc_abc_0", "type": "function_call", "status": "in_progress",
                                                  "arguments": "", "call_id": "call_1", "name": "get_weather"})"));
  EXPECT_EQ(rec.data[9], json::parse(R"({"type": "response.function_call_arguments.delta", "sequence_number": 9,
      "item_id": "fc_abc_0", "output_index": 1, "delta": "{\"ci"})"));
  EXPECT_EQ(rec.data[10]["delta"], "ty\":\"Paris\"}");
  EXPECT_EQ(rec.data[11], json::parse(R"({"type": "response.function_call_arguments.done", "sequence_number": 11,
      "item_id": "fc_abc_0", "output_index": 1, "arguments": "{\"city\":\"Paris\"}"})"));
  EXPECT_EQ(rec.data[12]["item"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(rec.data[12]["item"]["status"], "completed");
  EXPECT_EQ(rec.data[13]["item"]["call_id"], "call_2");
  EXPECT_EQ(rec.data[13]["output_index"], 2);
  EXPECT_EQ(rec.data[14]["delta"], "{}");
  EXPECT_EQ(rec.data[17]["response"], json::parse(RenderResponse(Context(), reply, Stats(), "completed")));
}

TEST(ResponsesStream, CallsOnlyAtTheEndAreStreamedByFinish) {
  ResponsesStream stream(Context());
  Recorder rec;
  engine::ParsedReply reply{"", "", {{"call_9", "f", R"({"a":1})"}}};
  rec.Add(stream.Finish(reply, Stats(), "completed"));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "response.created", "response.in_progress", "response.output_item.added",
                           "response.function_call_arguments.delta", "response.function_call_arguments.done",
                           "response.output_item.done", "response.completed"}));
  EXPECT_EQ(rec.data[6]["response"], json::parse(RenderResponse(Context(), reply, Stats(), "completed")));
}

TEST(ResponsesStream, AnEmptyReplyStillHasItsMessage) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Finish({}, Stats(), "completed"));
  EXPECT_EQ(rec.types, (std::vector<std::string>{
                           "response.created", "response.in_progress", "response.output_item.added",
                           "response.content_part.added", "response.output_text.done", "response.content_part.done",
                           "response.output_item.done", "response.completed"}));
  EXPECT_EQ(rec.data[7]["response"], json::parse(RenderResponse(Context(), {}, Stats(), "completed")));
}

TEST(ResponsesStream, ACutReplyEndsIncomplete) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("Hel")));
  engine::GenerationStats cut = Stats(engine::FinishReason::kLength);
  engine::ParsedReply reply{"Hel", "", {}};
  rec.Add(stream.Finish(reply, cut, ResponseStatusFor(cut)));
  EXPECT_EQ(rec.types.back(), "response.incomplete");
  EXPECT_EQ(rec.Last("response.output_item.done")["item"]["status"], "incomplete");
  const json& response = rec.data.back()["response"];
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(response, json::parse(RenderResponse(Context(), reply, cut, "incomplete")));
}

TEST(ResponsesStream, LogprobsArriveWithTheDoneEvents) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("Hi")));
  const std::vector<engine::TokenLogprob> logprobs = {{"Hi", -0.5f, {}}};
  rec.Add(stream.Finish({"Hi", "", {}}, Stats(), "completed", logprobs));
  const json want = json::parse(R"([{"token": "Hi", "bytes": [72, 105], "logprob": -0.5, "top_logprobs": []}])");
  EXPECT_EQ(rec.Last("response.output_text.delta")["logprobs"], json::array());
  EXPECT_EQ(rec.Last("response.output_text.done")["logprobs"], want);
  EXPECT_EQ(rec.Last("response.content_part.done")["part"]["logprobs"], want);
  EXPECT_EQ(rec.Last("response.completed")["response"]["output"][0]["content"][0]["logprobs"], want);
}

TEST(ResponsesStream, AFailureEndsTheStream) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("Hel")));
  rec.Add(stream.Fail("server_error", "the engine failed"));
  ASSERT_GE(rec.types.size(), 2u);
  EXPECT_EQ(rec.types[rec.types.size() - 2], "error");
  EXPECT_EQ(rec.data[rec.data.size() - 2], json::parse(R"({"type": "error", "sequence_number": 5,
      "code": "server_error", "message": "the engine failed", "param": null})"));
  const json& response = rec.data.back()["response"];
  EXPECT_EQ(rec.types.back(), "response.failed");
  EXPECT_EQ(response["status"], "failed");
  EXPECT_EQ(response["error"], json::parse(R"({"code": "server_error", "message": "the engine failed"})"));
  EXPECT_EQ(response["output"][0]["status"], "incomplete");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "Hel");
  EXPECT_TRUE(stream.Finish({"Hello", "", {}}, Stats(), "completed").empty());
}

TEST(ResponsesStream, BrokenUtf8FromTheModelIsReplacedNotThrown) {
  ResponsesStream stream(Context());
  Recorder rec;
  rec.Add(stream.Next(Content("a\xE2\x82")));
  rec.Add(stream.Finish({"a\xE2\x82", "", {}}, Stats(), "completed"));
  EXPECT_EQ(rec.Last("response.output_text.done")["text"], "a\uFFFD");
}

// What the stream's events look like on the wire.
TEST(ResponsesStream, EventsGoOutNamedAndWithoutDone) {
  RecordingResponder out;
  SseWriter sse(out);
  ResponsesStream stream(Context());
  for (const SseEvent& e : stream.Begin()) ASSERT_TRUE(sse.Event(e.event, e.data));
  ASSERT_TRUE(sse.End());
  EXPECT_TRUE(out.ended());
  EXPECT_EQ(out.body().rfind("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,", 0), 0u)
      << out.body();
  EXPECT_NE(out.body().find("\n\nevent: response.in_progress\ndata: {"), std::string::npos);
  EXPECT_EQ(out.body().find("[DONE]"), std::string::npos);
}

}  // namespace
}  // namespace llmd::http
