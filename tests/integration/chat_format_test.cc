// The llama.cpp engine's structured chats on the real templates (Qwen3 on the tiny model,
// Qwen3.5 on the tiny hybrid): what ConversationPrompt plans for tools, schemas and thinking,
// and how the plan's parser takes replies apart. The parser is fed text a real model writes,
// so reasoning and tool calls are checked without relying on what random weights generate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "tests/support/llama_test_engine.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using engine::ChatFormat;
using engine::ToolChoice;

const std::vector<engine::ChatTool> kTools = {
    {"get_weather", "Weather",
     R"({"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"]})"}};


const std::vector<chat::Message> kAsk = {{"user", "Weather in Paris?"}};

TEST(ChatFormat, ThinkingPutsTheThinkBlockInReasoningNotContent) {
  auto e = LoadTestEngine(TinyModelPath());
  ChatFormat f;
  f.enable_thinking = true;
  auto plan = e->ConversationPrompt(kAsk, f, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  ASSERT_NE(plan->parser, nullptr);
  EXPECT_TRUE(plan->grammar.empty());  // thinking alone constrains nothing
  auto reply = plan->parser->Parse("<think>\nIt is sunny there.\n</think>\n\nSunny.", false);
  EXPECT_EQ(reply.reasoning_content, "It is sunny there.");
  EXPECT_EQ(reply.content, "Sunny.");
  // Mid-stream, the reasoning so far is reasoning already.
  auto partial = plan->parser->Parse("<think>\nIt is su", true);
  EXPECT_EQ(partial.content, "");
  EXPECT_EQ(partial.reasoning_content.substr(0, 5), "It is");

  // Thinking off: a plain chat, no parser, the prompt closes the think block itself.
  auto plain = e->ConversationPrompt(kAsk, ChatFormat{}, true);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->parser, nullptr);
  auto text = e->Detokenize(plain->prompt, true);
  ASSERT_TRUE(text.has_value());
  EXPECT_NE(text->find("<think>\n\n</think>"), std::string::npos) << *text;
}

// A manifest's TEMPLATE (Jinja) replaces the file's template; one that does not parse or
// cannot render a turn fails the load, naming why, instead of falling back to ChatML.
TEST(ChatFormat, AReplacementTemplateRendersThePromptAndABrokenOneFailsTheLoad) {
  engine::EngineConfig config;
  config.model_path = TinyModelPath();
  config.context_tokens = 256;
  config.threads = kEngineThreads;
  config.chat_template =
      "{% for m in messages %}[{{ m.role | upper }}] {{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}[ASSISTANT] {% endif %}";
  auto e = engine::NewLlamaEngine();
  ASSERT_TRUE(e->Load(config).ok());
  EXPECT_TRUE(e->model_info().has_chat_template);
  auto plan = e->ConversationPrompt({{"system", "Be brief."}, {"user", "Hi"}}, ChatFormat{}, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  auto text = e->Detokenize(plan->prompt, true);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "[SYSTEM] Be brief.\n[USER] Hi\n[ASSISTANT] ");

  for (const char* broken : {"{% for m in messages %}{{ m.content }}", "{{ raise_exception('no') }}"}) {
    config.chat_template = broken;
    auto again = engine::NewLlamaEngine();
    const Status s = again->Load(config);
    ASSERT_FALSE(s.ok()) << broken;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("the chat template that replaces the model's (TEMPLATE) cannot be used"),
              std::string::npos)
        << s.message();
    // The parser's own words (patches/llama.cpp/0003), not a sliced copy's "std::exception".
    EXPECT_EQ(s.message().find("std::exception"), std::string::npos) << s.message();
  }
}

TEST(ChatFormat, ToolCallsAreParsedOutAndAMalformedOneIsText) {
  auto e = LoadTestEngine(TinyModelPath());
  ChatFormat f;
  f.tools = kTools;
  auto plan = e->ConversationPrompt(kAsk, f, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_TRUE(plan->grammar_lazy);  // auto: free text until a call starts
  EXPECT_FALSE(plan->grammar_trigger_patterns.empty() && plan->grammar_trigger_tokens.empty());
  auto text = e->Detokenize(plan->prompt, true);
  EXPECT_NE(text->find("get_weather"), std::string::npos);  // the template shows the tools
  auto reply = plan->parser->Parse(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", false);
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].name, "get_weather");
  EXPECT_EQ(reply.content, "");
  auto words = plan->parser->Parse("Just words.", false);
  EXPECT_EQ(words.content, "Just words.");
  EXPECT_TRUE(words.tool_calls.empty());
  // A call cut short parses without throwing; the HTTP layer drops or shows it as text by
  // whether the token limit cut it (openai_routes.cc).
  auto broken = plan->parser->Parse("<tool_call>\n{\"name\": \"get_weather\", \"argu", false);
  for (const auto& call : broken.tool_calls) EXPECT_EQ(call.arguments.find('}'), std::string::npos);
}

TEST(ChatFormat, RequiredAndNamedCallsStartAtOnce) {
  auto e = LoadTestEngine(TinyModelPath());
  for (ToolChoice choice : {ToolChoice::kRequired, ToolChoice::kNamed}) {
    ChatFormat f;
    f.tools = kTools;
    f.tool_choice = choice;
    f.tool_name = "get_weather";
    f.parallel_tool_calls = false;
    auto plan = e->ConversationPrompt(kAsk, f, true);
    ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
    EXPECT_FALSE(plan->grammar_lazy);
    EXPECT_FALSE(plan->grammar_prefill.empty());  // the grammar starts with the generation prompt
    // No free-text rule ahead of the calls in the root rule, and one call only.
    const size_t root = plan->grammar.find("\nroot ::= ");
    ASSERT_NE(root, std::string::npos) << plan->grammar;
    const std::string rule = plan->grammar.substr(root + 1, plan->grammar.find('\n', root + 1) - root - 1);
    const size_t think_end = rule.rfind(")?");
    EXPECT_EQ(rule.find("until-", think_end == std::string::npos ? 0 : think_end), std::string::npos) << rule;
    EXPECT_NE(plan->grammar.find("\ntool-calls ::= tool-call space"), std::string::npos) << plan->grammar;
  }
  ChatFormat unknown;
  unknown.tools = kTools;
  unknown.tool_choice = ToolChoice::kNamed;
  unknown.tool_name = "get_time";
  auto missing = e->ConversationPrompt(kAsk, unknown, true);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("get_time"), std::string::npos);
}

// A tool without a schema is shown and called as one whose schema is empty, as llama.cpp
// takes an OpenAI tool without "parameters"; a schema that is not JSON is refused.
TEST(ChatFormat, AToolWithoutASchemaTakesAnEmptyOne) {
  auto e = LoadTestEngine(TinyModelPath());
  for (ToolChoice choice : {ToolChoice::kAuto, ToolChoice::kNamed}) {
    ChatFormat none;
    none.tools = {kTools[0], {"ping", "", ""}};
    none.tool_choice = choice;
    none.tool_name = "ping";
    ChatFormat empty = none;
    empty.tools[1].parameters = "{}";
    auto a = e->ConversationPrompt(kAsk, none, true);
    auto b = e->ConversationPrompt(kAsk, empty, true);
    ASSERT_TRUE(a.has_value()) << a.error().ToString();
    ASSERT_TRUE(b.has_value()) << b.error().ToString();
    EXPECT_EQ(a->prompt, b->prompt);
    EXPECT_EQ(a->grammar, b->grammar);
    auto text = e->Detokenize(a->prompt, true);
    EXPECT_NE(text->find(R"({"name": "ping", "description": "", "parameters": {}})"), std::string::npos) << *text;
  }
  ChatFormat bad;
  bad.tools = {{"ping", "", "{not json"}};
  auto refused = e->ConversationPrompt(kAsk, bad, true);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
}

TEST(ChatFormat, ASchemaBecomesAGrammarAndABadOneIsNamed) {
  auto e = LoadTestEngine(TinyModelPath());
  ChatFormat f;
  f.json_schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  auto plan = e->ConversationPrompt(kAsk, f, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_FALSE(plan->grammar.empty());
  EXPECT_EQ(plan->parser->Parse("{\"a\": 3}", false).content, "{\"a\": 3}");
  ChatFormat bad;
  bad.json_schema = R"({"$ref":"#/definitions/nowhere"})";
  auto refused = e->ConversationPrompt(kAsk, bad, true);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
}

TEST(ChatFormat, TheHybridModelsTemplateCallsToolsInItsOwnFormat) {
  auto e = LoadTestEngine(Qwen35TinyPath());
  ChatFormat f;
  f.tools = kTools;
  f.tool_choice = ToolChoice::kRequired;
  auto plan = e->ConversationPrompt(kAsk, f, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  auto reply = plan->parser->Parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>", false);
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].name, "get_weather");
  EXPECT_NE(reply.tool_calls[0].arguments.find("Paris"), std::string::npos);
}

}  // namespace
}  // namespace llmd::testing
