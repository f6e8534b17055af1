// What a coding agent sends, against the daemon's default context (one KV pool of the model's
// trained context: engine/context_size.h): a system prompt of over 10,000 tokens, 20 tools, a
// tool_choice that forces a call, streamed, through the OpenAI, Anthropic and Ollama APIs.
// The tiny model has random weights, so the tests state structure: the request is accepted
// whole (its prompt tokens counted, nothing cut), the forced call is there, the second turn
// starts from the cached prefix, and what does not fit is refused with the numbers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using nlohmann::json;

// A long, varied system prompt: `rules` numbered rules of about 15 tokens each.
std::string AgentSystemPrompt(int rules) {
  std::ostringstream out;
  out << "You are a coding agent working in a large repository. Follow every rule below.\n";
  for (int i = 0; i < rules; ++i) {
    out << "Rule " << i << ": before editing src/module_" << i % 97 << "/file_" << i << ".cc, read its tests and keep "
        << (i % 3 == 0 ? "the style" : i % 3 == 1 ? "the naming" : "the error messages") << ".\n";
  }
  return out.str();
}

// 20 function tools; each takes a path and a mode from a closed set.
json OpenAiTools() {
  json tools = json::array();
  for (int i = 0; i < 20; ++i) {
    tools.push_back({{"type", "function"},
                     {"function",
                      {{"name", "tool_" + std::to_string(i)},
                       {"description", "Tool number " + std::to_string(i) + " of the agent"},
                       {"parameters",
                        {{"type", "object"},
                         {"properties", {{"path", {{"type", "string"}, {"maxLength", 24}}},
                                         {"mode", {{"type", "string"}, {"enum", {"read", "write"}}}}}},
                         {"required", {"path", "mode"}},
                         {"additionalProperties", false}}}}}});
  }
  return tools;
}

json AnthropicTools() {
  json tools = json::array();
  for (const json& t : OpenAiTools()) {
    tools.push_back({{"name", t["function"]["name"]},
                     {"description", t["function"]["description"]},
                     {"input_schema", t["function"]["parameters"]}});
  }
  return tools;
}

// The data lines of an SSE body, parsed (not [DONE]).
std::vector<json> SseData(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.starts_with("data: ") || line == "data: [DONE]") continue;
    json j = json::parse(line.substr(6), nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

constexpr int kRules = 700;  // ~11,000 tokens with the template
constexpr int kAgentTokens = 10000;

class AgentContext : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // --context 0: the default (the harness passes 1024 before it).
    daemon_ = new HttpDaemon({"--context", "0", "--rate-limit", "1000000"});
  }
  static void TearDownTestSuite() { delete daemon_; }
  static HttpDaemon* daemon_;
};
HttpDaemon* AgentContext::daemon_ = nullptr;

json OpenAiAgentRequest(const std::string& system) {
  return {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", "Open file_7."}}}},
          {"tools", OpenAiTools()},
          {"tool_choice", {{"type", "function"}, {"function", {{"name", "tool_7"}}}}},
          {"parallel_tool_calls", false},
          {"max_tokens", 200},
          {"temperature", 0},
          {"stream", true},
          {"stream_options", {{"include_usage", true}}}};
}

TEST_F(AgentContext, OpenAiStreamsTheForcedCallAndTheSecondTurnStartsFromTheCache) {
  ASSERT_TRUE(daemon_->process().ready()) << daemon_->process().log();
  const std::string system = AgentSystemPrompt(kRules);
  for (int turn = 1; turn <= 2; ++turn) {
    HttpReply r = daemon_->Unix("POST", "/v1/chat/completions", OpenAiAgentRequest(system).dump());
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
    std::string name, arguments;
    json finish, usage;
    for (const json& e : SseData(r.body)) {
      if (e.contains("usage") && e["usage"].is_object()) usage = e["usage"];
      if (!e.contains("choices") || e["choices"].empty()) continue;
      const json& c = e["choices"][0];
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      if (!c["delta"].contains("tool_calls")) continue;
      for (const json& t : c["delta"]["tool_calls"]) {
        if (t["function"].contains("name")) name = t["function"]["name"];
        arguments += t["function"].value("arguments", "");
      }
    }
    EXPECT_EQ(name, "tool_7") << "turn " << turn;
    EXPECT_EQ(finish, "tool_calls");
    const json args = json::parse(arguments, nullptr, false);
    ASSERT_TRUE(args.is_object()) << arguments;
    EXPECT_TRUE(args["mode"] == "read" || args["mode"] == "write") << args;
    ASSERT_TRUE(usage.is_object()) << "include_usage";
    EXPECT_GT(usage["prompt_tokens"].get<int>(), kAgentTokens) << "the whole prompt, nothing cut";
    const int cached = usage["prompt_tokens_details"]["cached_tokens"].get<int>();
    if (turn == 2) {
      EXPECT_GT(cached, kAgentTokens) << "the second turn prefills only what changed";
    }
  }
}

TEST_F(AgentContext, AnthropicStreamsTheForcedToolUse) {
  const json body = {{"model", "tiny-q8_0"},
                     {"system", AgentSystemPrompt(kRules)},
                     {"messages", {{{"role", "user"}, {"content", "Open file_7."}}}},
                     {"tools", AnthropicTools()},
                     {"tool_choice", {{"type", "tool"}, {"name", "tool_7"}}},
                     {"max_tokens", 200},
                     {"temperature", 0},
                     {"stream", true}};
  HttpReply r = daemon_->Unix("POST", "/v1/messages", body.dump());
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
  std::string tool;
  json stop_reason;
  int input_tokens = 0;
  for (const json& e : SseData(r.body)) {
    // The count comes with the final usage (message_delta) once the prompt has been read.
    if (e["type"] == "message_delta") input_tokens = e["usage"].value("input_tokens", 0);
    if (e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use") tool = e["content_block"]["name"];
    if (e["type"] == "message_delta") stop_reason = e["delta"]["stop_reason"];
  }
  EXPECT_EQ(tool, "tool_7");
  EXPECT_EQ(stop_reason, "tool_use");
  EXPECT_GT(input_tokens, kAgentTokens);
}

// Ollama has no tool_choice: the model decides. The stream is whole and counts every token.
TEST_F(AgentContext, OllamaStreamsTheWholePrompt) {
  const json body = {{"model", "tiny-q8_0"},
                     {"messages", {{{"role", "system"}, {"content", AgentSystemPrompt(kRules)}},
                                   {{"role", "user"}, {"content", "Open file_7."}}}},
                     {"tools", OpenAiTools()},
                     {"options", {{"num_predict", 16}, {"temperature", 0}}}};
  HttpReply r = daemon_->Unix("POST", "/api/chat", body.dump());
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
  std::istringstream lines(r.body);
  std::string line;
  json last;
  while (std::getline(lines, line)) {
    if (!line.empty()) last = json::parse(line, nullptr, false);
  }
  ASSERT_TRUE(last.is_object()) << r.body.substr(0, 400);
  EXPECT_EQ(last["done"], true);
  EXPECT_GT(last["prompt_eval_count"].get<int>(), kAgentTokens);
}

// A request's own num_ctx is honoured: too small for the prompt, it is refused with the
// numbers, never cut.
TEST_F(AgentContext, OllamaNumCtxBelowThePromptIsRefusedWithTheNumbers) {
  const json body = {{"model", "tiny-q8_0"},
                     {"stream", false},
                     {"messages", {{{"role", "system"}, {"content", AgentSystemPrompt(kRules)}},
                                   {{"role", "user"}, {"content", "Open file_7."}}}},
                     {"options", {{"num_ctx", 8192}, {"num_predict", 4}}}};
  HttpReply r = daemon_->Unix("POST", "/api/chat", body.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("context of 8192"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("num_ctx"), std::string::npos) << r.body;
}

// More than the whole pool (the tiny model's trained context, 40,960 tokens) is refused with
// the numbers and where the limit comes from.
TEST_F(AgentContext, APromptLongerThanThePoolIsRefusedWithTheNumbers) {
  json body = OpenAiAgentRequest(AgentSystemPrompt(kRules * 4));
  body["stream"] = false;
  body.erase("stream_options");
  HttpReply r = daemon_->Unix("POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 400);
  EXPECT_NE(r.body.find("context_length_exceeded"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("context of 40960"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("KV pool"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace llmd::testing
