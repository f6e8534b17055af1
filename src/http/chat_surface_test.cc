#include "http/chat_surface.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "http/anthropic/anthropic_api.h"
#include "http/ollama/ollama_api.h"
#include "http/openai/openai_request.h"
#include "http/responses/responses_api.h"

namespace llmd::http {
namespace {

using engine::ToolChoice::kAuto;
using engine::ToolChoice::kNamed;
using engine::ToolChoice::kRequired;

chat::Message Msg(std::string role, std::string content = "x") {
  return {std::move(role), std::move(content)};
}

chat::Message Calls(std::vector<std::string> ids) {
  chat::Message m = Msg("assistant", "");
  for (auto& id : ids) m.tool_calls.push_back({std::move(id), "f", "{}"});
  return m;
}

chat::Message Result(std::string id) {
  chat::Message m = Msg("tool");
  m.tool_call_id = std::move(id);
  return m;
}

ToolSpec Tool(std::string name, std::string field) {
  return {{.name = std::move(name)}, std::move(field)};
}

const std::vector<ToolSpec> kOneTool = {Tool("f", "tools[0].function")};

// Every check, on the default (chat completions) words; "" is accepted.
TEST(ChatSurface, EveryCheckOnce) {
  struct Case {
    std::vector<chat::Message> messages;
    std::vector<ToolSpec> tools;
    engine::ToolChoice mode;
    const char* name;  // of a kNamed choice
    std::string says;
  };
  const std::vector<Case> cases = {
      {{Msg("user")}, {}, kAuto, "", ""},
      {{Msg("system"), Msg("user"), Calls({"a", "b"}), Result("b"), Result("a"), Msg("user")},
       kOneTool,
       kAuto,
       "",
       ""},
      {{Msg("user")},
       {Tool("f", "tools[0].function"), Tool("f", "tools[1].function")},
       kAuto,
       "",
       "'tools[1].function.name' 'f' is used twice"},
      {{Msg("user")},
       {},
       kRequired,
       "",
       "'tool_choice' asks for a tool call, but 'tools' is empty"},
      {{Msg("user")}, {}, kNamed, "f", "'tool_choice' asks for a tool call, but 'tools' is empty"},
      {{Msg("user")}, kOneTool, kNamed, "g", "'tool_choice.function.name' 'g' is not in 'tools'"},
      {{Msg("user")}, kOneTool, kNamed, "f", ""},
      {{Msg("bot")},
       {},
       kAuto,
       "",
       "'messages[0].role' must be system, user, assistant or tool (got 'bot')"},
      {{[] {
         auto m = Calls({"a"});
         m.role = "user";
         return m;
       }()},
       {},
       kAuto,
       "",
       "'messages[0].tool_calls' is only for assistant messages"},
      {{Msg("user"), Calls({""}), Result("")},
       {},
       kAuto,
       "",
       "'messages[1].tool_calls[0].id' must be a non-empty string"},
      {{Msg("user"), Calls({"a"}), Calls({"a"}), Result("a")},
       {},
       kAuto,
       "",
       "'messages[2].tool_calls[0].id' 'a' is used by an earlier tool call"},
      {{Msg("user"), Result("zz")},
       {},
       kAuto,
       "",
       "'messages[1].tool_call_id' 'zz' answers no tool call before it"},
      {{Msg("user"), Result("")}, {}, kAuto, "", "'messages[1]' answers no tool call before it"},
      {{Msg("user"), Calls({"a"}), Result("a"), Result("a")},
       {},
       kAuto,
       "",
       "'messages[3].tool_call_id' 'a' was answered already"},
      {{Msg("user"), Calls({"a", "b"}), Result("b"), Msg("user")},
       {},
       kAuto,
       "",
       "'messages' has a tool call with id 'a' but no tool message for it"},
      {{Msg("user"), Msg("assistant")},
       {},
       kAuto,
       "",
       "the last message must not be the assistant's (llmd does not continue a reply)"},
  };
  for (const auto& c : cases) {
    const Status s = ValidateConversation(c.messages, c.tools, {c.mode, c.name}, ChatDialect{});
    if (c.says.empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_EQ(s.message(), c.says);
    }
  }
}

// The dialect's words and origins name the fault as the API's client sent it.
TEST(ChatSurface, TheDialectNamesTheFault) {
  const ChatDialect input{.list = "input",
                          .call = "function_call",
                          .call_id = "call_id",
                          .result = "function_call_output",
                          .result_id = "call_id",
                          .needs_user_turn = true};
  const std::vector<MessageOrigin> origins = {
      {"input[0]", {}}, {"input[1]", {"input[1]"}}, {"input[2]", {}}};
  Status s =
      ValidateConversation({Msg("user"), Calls({"a"}), Result("zz")}, {}, {}, input, origins);
  EXPECT_EQ(s.message(), "'input[2].call_id' 'zz' answers no function_call before it");
  s = ValidateConversation({Msg("user"), Calls({"a"})}, {}, {}, input, origins);
  EXPECT_EQ(s.message(),
            "'input' has a function_call with call_id 'a' but no function_call_output for it");
  s = ValidateConversation({Msg("system")}, {}, {}, input, origins);
  EXPECT_EQ(s.message(), "'input' must have a user turn");
  EXPECT_TRUE(
      ValidateConversation({Msg("system")}, {}, {}, ChatDialect{}).ok());  // no user turn needed
}

TEST(ChatSurface, ToolChoiceFaultsCarryTheirReason) {
  for (const ToolChoice& c : {ToolChoice{kRequired, ""}, ToolChoice{kNamed, "g"}}) {
    const auto tools = c.mode == kNamed ? kOneTool : std::vector<ToolSpec>{};
    EXPECT_EQ(ValidateConversation({Msg("user")}, tools, c, ChatDialect{}).reason(),
              ErrorReason::kToolNotOffered);
  }
}

TEST(ChatSurface, ApplyToolsHandsTheEngineEachToolAsSent) {
  engine::ChatFormat f;
  ApplyTools({{{"f", "does f", R"({"type":"object"})"}, "tools[0]"}, Tool("g", "tools[1]")},
             {kNamed, "g"}, &f);
  EXPECT_EQ(f.tools, (std::vector<engine::ChatTool>{{"f", "does f", R"({"type":"object"})"},
                                                    {"g", "", ""}}));
  EXPECT_EQ(f.tool_choice, kNamed);
  EXPECT_EQ(f.tool_name, "g");
  ApplyTools({}, {}, &f);
  EXPECT_TRUE(f.tools.empty());
  EXPECT_EQ(f.tool_choice, kAuto);
}

// One fault, every API: an unanswered call and a tool result that answers nothing are
// refused the same way (in each API's words), and so is a conversation the assistant ends.
TEST(ChatSurface, EveryApiRefusesTheSameFaults) {
  const char* openai_unanswered = R"({"messages":[{"role":"user","content":"q"},
      {"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
      {"role":"user","content":"x"}]})";
  EXPECT_EQ(ParseChatRequest(openai_unanswered).error().message(),
            "'messages' has a tool call with id 'a' but no tool message for it");
  EXPECT_EQ(
      ParseChatRequest(
          R"({"messages":[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"zz"}]})")
          .error()
          .message(),
      "'messages[1].tool_call_id' 'zz' answers no tool call before it");
  const char* ollama_unanswered = R"({"messages":[{"role":"user","content":"q"},
      {"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]},{"role":"user","content":"x"}]})";
  EXPECT_EQ(ParseOllamaChat(ollama_unanswered, {}).error().message(),
            "'messages' has a tool call with id 'call_0' but no tool message for it");
  EXPECT_EQ(ParseOllamaChat(
                R"({"messages":[{"role":"user","content":"q"},{"role":"tool","content":"r"}]})", {})
                .error()
                .message(),
            "'messages[1]' answers no tool call before it");
  const std::string last =
      "the last message must not be the assistant's (llmd does not continue a reply)";
  EXPECT_EQ(ParseAnthropicRequest(
                R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"q"},
      {"role":"assistant","content":"a"}]})")
                .error()
                .message(),
            last);
  EXPECT_EQ(ParseResponsesRequest(
                R"({"input":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]})")
                .error()
                .message(),
            last);
}

}  // namespace
}  // namespace llmd::http
