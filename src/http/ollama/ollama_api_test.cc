#include "http/ollama/ollama_api.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gguf_builder.h"

namespace llmd::http {
namespace {

using nlohmann::json;

const OllamaLimits kLimits{2048};

// Expects InvalidArgument whose message contains `says`.
template <typename T>
void ExpectRefused(const Result<T>& r, const std::string& says, const std::string& body) {
  ASSERT_FALSE(r.has_value()) << "accepted: " << body;
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << body;
  EXPECT_NE(r.error().message().find(says), std::string::npos)
      << "body " << body << "\nmessage: " << r.error().message() << "\nwanted: " << says;
}

// A chat body with one user message and `extra` fields (",\"k\":v...").
std::string Chat(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" + extra + "}";
}
std::string WithOptions(const std::string& options) { return Chat(R"(,"options":)" + options); }

TEST(OllamaApi, ParsesAChatRequestWithEveryField) {
  const std::string body = R"({"model":"m:latest","stream":false,"keep_alive":"5m","think":"high",
      "logprobs":true,"top_logprobs":3,
      "format":{"type":"object","properties":{"a":{"type":"integer"}}},
      "tools":[{"type":"function","function":{"name":"get_weather","description":"d",
                "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
               {"function":{"name":"no_type"}}],
      "messages":[{"role":"system","content":"be brief"},
                  {"role":"user","content":"weather?","images":[]},
                  {"role":"assistant","content":"","thinking":"let me see",
                   "tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
                  {"role":"tool","content":"21C","tool_name":"get_weather"},
                  {"role":"user","content":"thanks"}],
      "options":{"num_predict":7,"temperature":0.5,"top_k":3,"top_p":0.8,"seed":42,"stop":["a","b"],
                 "repeat_penalty":1.2,"presence_penalty":0.1,"frequency_penalty":-0.5,"num_ctx":1024}})";
  auto r = ParseOllamaChat(body, kLimits);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const GenerationRequest& g = r->gen;
  EXPECT_TRUE(g.chat);
  EXPECT_FALSE(r->load_only);
  EXPECT_EQ(*g.model, "m:latest");  // the routes resolve the tag
  EXPECT_FALSE(g.stream);
  EXPECT_EQ(r->keep_alive_ms, 300000);  // "5m"
  ASSERT_TRUE(g.enable_thinking.has_value());
  EXPECT_TRUE(*g.enable_thinking);
  EXPECT_EQ(g.top_logprobs, 3);
  EXPECT_EQ(json::parse(g.format.json_schema)["properties"]["a"]["type"], "integer");
  const auto& tools = g.format.tools;
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].name, "get_weather");
  EXPECT_EQ(tools[0].description, "d");
  EXPECT_EQ(json::parse(tools[0].parameters)["properties"]["city"]["type"], "string");
  EXPECT_EQ(tools[1].name, "no_type");  // a function tool where the client left the type out
  EXPECT_EQ(tools[1].description, "");
  EXPECT_EQ(tools[1].parameters, "");
  ASSERT_EQ(g.messages.size(), 5u);
  EXPECT_EQ(g.messages[0].role, "system");
  ASSERT_EQ(g.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(g.messages[2].tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(g.messages[2].tool_calls[0].arguments), json({{"city", "Paris"}}));
  EXPECT_FALSE(g.messages[2].tool_calls[0].id.empty());
  EXPECT_EQ(g.messages[3].tool_call_id, g.messages[2].tool_calls[0].id);
  EXPECT_EQ(*g.max_tokens, 7u);
  EXPECT_FLOAT_EQ(*g.temperature, 0.5f);
  EXPECT_EQ(*g.top_k, 3);
  EXPECT_FLOAT_EQ(*g.top_p, 0.8f);
  EXPECT_EQ(*g.seed, 42u);
  EXPECT_EQ(g.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(*g.repeat_penalty, 1.2f);
  EXPECT_FLOAT_EQ(*g.presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(*g.frequency_penalty, -0.5f);
  EXPECT_EQ(*r->num_ctx, 1024);
}

TEST(OllamaApi, DefaultsAreOllamasAndNullIsAbsent) {
  auto r = ParseOllamaChat(
      Chat(R"(,"stream":null,"think":null,"format":null,"options":{"temperature":null})"), kLimits);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->gen.stream);                        // Ollama streams unless told not to
  EXPECT_FALSE(r->gen.enable_thinking.has_value());  // the configured default decides
  EXPECT_TRUE(r->gen.format.json_schema.empty());
  EXPECT_TRUE(r->gen.format.tools.empty());
  EXPECT_FALSE(r->gen.temperature.has_value());
  EXPECT_FALSE(r->gen.max_tokens.has_value());
  EXPECT_EQ(r->gen.top_logprobs, -1);
  EXPECT_FALSE(r->keep_alive_ms.has_value());
  EXPECT_FALSE(r->num_ctx.has_value());
}

// truncate is the overflow policy (absent: llmd's default, refused when too long, although
// Ollama's own default truncates); shift only as false, which is what llmd does.
TEST(OllamaApi, TruncateIsTheOverflowPolicyAndShiftOnlyFalse) {
  auto on = ParseOllamaChat(Chat(R"(,"truncate":true,"shift":false)"), kLimits);
  ASSERT_TRUE(on.has_value()) << on.error().ToString();
  EXPECT_EQ(on->gen.overflow, engine::ContextOverflow::kDropOldest);
  auto off = ParseOllamaGenerate(R"({"model":"m","prompt":"hi","truncate":false})", kLimits);
  ASSERT_TRUE(off.has_value()) << off.error().ToString();
  EXPECT_EQ(off->gen.overflow, engine::ContextOverflow::kError);
  auto absent = ParseOllamaChat(Chat(R"(,"truncate":null)"), kLimits);
  ASSERT_TRUE(absent.has_value());
  EXPECT_FALSE(absent->gen.overflow.has_value());  // the X-Llmd-Overflow header, else refused
  ExpectRefused(ParseOllamaChat(Chat(R"(,"truncate":"yes")"), kLimits), "'truncate' must be", Chat("truncate"));
  ExpectRefused(ParseOllamaChat(Chat(R"(,"shift":true)"), kLimits),
                "'shift': true is not supported: llmd never shifts the context", Chat("shift"));
}

TEST(OllamaApi, FormatJsonIsAnyObjectAndEmptyIsNone) {
  auto json_format = ParseOllamaChat(Chat(R"(,"format":"json")"), kLimits);
  ASSERT_TRUE(json_format.has_value());
  EXPECT_EQ(json_format->gen.format.json_schema, R"({"type":"object"})");
  auto none = ParseOllamaChat(Chat(R"(,"format":"")"), kLimits);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->gen.format.json_schema.empty());
}

TEST(OllamaApi, ThinkIsASwitchOrALevel) {
  for (const char* on : {"true", "\"low\"", "\"medium\"", "\"high\""}) {
    auto r = ParseOllamaChat(Chat(std::string(R"(,"think":)") + on), kLimits);
    ASSERT_TRUE(r.has_value()) << on;
    EXPECT_TRUE(r->gen.enable_thinking.value_or(false)) << on;
  }
  auto off = ParseOllamaChat(Chat(R"(,"think":false)"), kLimits);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->gen.enable_thinking.value_or(true));
}

TEST(OllamaApi, NoMessagesIsALoadRequest) {
  for (const char* body : {R"({"model":"m"})", R"({"model":"m","messages":[]})"}) {
    auto r = ParseOllamaChat(body, kLimits);
    ASSERT_TRUE(r.has_value()) << body;
    EXPECT_TRUE(r->load_only) << body;
  }
  auto g = ParseOllamaGenerate(R"({"model":"m","keep_alive":0})", kLimits);
  ASSERT_TRUE(g.has_value());
  EXPECT_TRUE(g->load_only);
  EXPECT_EQ(g->keep_alive_ms, 0);  // the unload request
}

TEST(OllamaApi, ToolMessagesAnswerCallsByIdByNameOrInOrder) {
  auto r = ParseOllamaChat(R"({"messages":[{"role":"user","content":"q"},
      {"role":"assistant","tool_calls":[{"function":{"name":"a","arguments":{}}},
                                        {"function":{"name":"b","arguments":{"x":1}}},
                                        {"id":"mine","function":{"name":"c"}}]},
      {"role":"tool","content":"B","tool_name":"b"},
      {"role":"tool","content":"C","tool_call_id":"mine"},
      {"role":"tool","content":"A"}]})",
                           kLimits);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const auto& m = r->gen.messages;
  const auto& calls = m[1].tool_calls;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2].id, "mine");
  EXPECT_EQ(calls[2].arguments, "{}");  // no arguments: an empty object
  EXPECT_NE(calls[0].id, calls[1].id);
  EXPECT_EQ(m[2].tool_call_id, calls[1].id);
  EXPECT_EQ(m[3].tool_call_id, "mine");
  EXPECT_EQ(m[4].tool_call_id, calls[0].id);  // the first call still open
}

TEST(OllamaApi, RefusesBadChatBodiesWithTheFieldNamed) {
  struct Case {
    std::string body;
    const char* says;
  } cases[] = {
      {"", "not valid JSON"},
      {"[1]", "JSON object"},
      {R"({"model":5,"messages":[]})", "'model' must be a string"},
      {R"({"messages":"hi"})", "'messages' must be an array"},
      {R"({"messages":[5]})", "'messages[0]' must be an object"},
      {R"({"messages":[{"content":"x"}]})", "'messages[0].role' must be a string"},
      {R"({"messages":[{"role":"developer","content":"x"}]})",
       "'messages[0].role' must be system, user, assistant or tool (got 'developer')"},
      {R"({"messages":[{"role":"user","content":["x"]}]})",
       "'messages[0].content' must be a string"},
      {R"({"messages":[{"role":"user","content":"x","images":["aGk="]}]})",
       "'messages[0].images' is not supported"},
      {R"({"messages":[{"role":"user","content":"x","thinking":1}]})",
       "'messages[0].thinking' must be a string"},
      {R"({"messages":[{"role":"user","content":"x","tool_calls":[{"function":{"name":"f"}}]}]})",
       "'messages[0].tool_calls' is only for assistant messages"},
      {R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]})",
       "must not be the assistant's"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"x"}]})",
       "'messages[0].tool_calls[0].function.arguments' must be an object"},
      {R"({"messages":[{"role":"assistant","tool_calls":[{"name":"f"}]},{"role":"user","content":"x"}]})",
       "'messages[0].tool_calls[0].function' must be an object"},
      {R"({"messages":[{"role":"tool","content":"x","tool_name":5}]})",
       "'messages[0].tool_name' must be a string"},
      {Chat(R"(,"stream":"yes")"), "'stream' must be true or false"},
      {Chat(R"(,"format":"xml")"), "'format' must be \"json\" or a JSON schema object"},
      {Chat(R"(,"format":5)"), "'format' must be \"json\" or a JSON schema object"},
      {Chat(R"(,"think":"max")"), "'think' must be true, false, \"low\", \"medium\" or \"high\""},
      {Chat(R"(,"keep_alive":true)"), "'keep_alive' must be a duration"},
      {Chat(R"(,"keep_alive":"5 minutes")"), "'keep_alive': '5 minutes' is not a duration"},
      {Chat(R"(,"tools":{})"), "'tools' must be an array"},
      {Chat(R"(,"tools":[{"type":"web_search"}])"),
       "'tools[0]' is a 'web_search' tool, which llmd does not have (only function tools)"},
      {Chat(R"(,"tools":[{"type":"function","function":{}}])"),
       "'tools[0].function.name' must be a non-empty string"},
      {Chat(R"(,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}])"),
       "'tools[0].function.parameters'"},
      {Chat(R"(,"logprobs":1)"), "'logprobs' must be true or false"},
      {Chat(R"(,"top_logprobs":21,"logprobs":true)"), "'top_logprobs' must be in 0..20"},
      {Chat(R"(,"top_logprobs":2)"), "'top_logprobs' needs 'logprobs': true"},
      {Chat(R"(,"options":[])"), "'options' must be an object"},
  };
  for (const auto& c : cases) ExpectRefused(ParseOllamaChat(c.body, kLimits), c.says, c.body);
}

TEST(OllamaApi, RefusesEveryOptionItCannotHonourByName) {
  struct Case {
    const char* options;
    const char* says;
  } cases[] = {
      {R"({"frobnicate":1})", "'options.frobnicate' is not an option llmd knows"},
      {R"({"temperature":3})", "'options.temperature' must be in 0..2"},
      {R"({"temperature":"hot"})", "'options.temperature' must be a number"},
      {R"({"top_p":1.5})", "'options.top_p' must be in 0..1"},
      {R"({"top_k":0})", "'options.top_k' must be in 1..1048576"},
      {R"({"repeat_penalty":0.5})", "'options.repeat_penalty' must be in 1..10"},
      {R"({"presence_penalty":3})", "'options.presence_penalty' must be in -2..2"},
      {R"({"frequency_penalty":-3})", "'options.frequency_penalty' must be in -2..2"},
      {R"({"num_predict":-3})", "'options.num_predict' must be in -2..4294967295"},
      {R"({"num_predict":1.5})", "'options.num_predict' must be an integer"},
      {R"({"seed":"x"})", "'options.seed' must be an integer"},
      {R"({"stop":["a","b","c","d","e"]})",
       "'options.stop' must be a string or an array of up to 4 strings"},
      {R"({"stop":[1]})", "'options.stop' must be a string or an array"},
      {R"({"mirostat":2})",
       "'options.mirostat' is not supported by llmd (only 0, off, is accepted)"},
      {R"({"tfs_z":0.9})", "'options.tfs_z' is not supported by llmd (only 1, off"},
      {R"({"typical_p":0.5})", "'options.typical_p' is not supported by llmd (only 1, off"},
      {R"({"min_p":0.05})", "'options.min_p' is not supported by llmd (only 0, off"},
      {R"({"repeat_last_n":32})", "'options.repeat_last_n' must be 64"},
      {R"({"penalize_newline":false})", "'options.penalize_newline' must be true"},
      {R"({"mirostat_tau":"x"})", "'options.mirostat_tau' must be a number"},
      {R"({"num_keep":"x"})", "'options.num_keep' must be an integer"},
      {R"({"numa":true})", "'options.numa' is not supported by llmd (only false"},
      {R"({"low_vram":true})", "'options.low_vram' is not supported"},
      {R"({"use_mlock":true})", "'options.use_mlock' is not supported"},
      {R"({"num_gpu":99})",
       "'options.num_gpu' is set when llmd loads the model (gpu_layers), not per request"},
      {R"({"main_gpu":0})", "'options.main_gpu' is set when llmd loads the model (main_device)"},
      {R"({"num_thread":4})", "'options.num_thread' is set when llmd loads the model (threads)"},
      {R"({"num_batch":512})",
       "'options.num_batch' is set when llmd loads the model (batch_tokens)"},
      {R"({"use_mmap":true})", "'options.use_mmap' is set when llmd loads the model (use_mmap)"},
      {R"({"f16_kv":true})", "'options.f16_kv' is set when llmd loads the model (kv_cache_type)"},
      {R"({"rope_frequency_base":10000})",
       "'options.rope_frequency_base' is set when llmd loads the model (the model file)"},
      {R"({"num_ctx":4096})",
       "'options.num_ctx' is 4096, more than the context llmd loaded (2048 tokens, "
       "max_context_len"},
      {R"({"num_ctx":0})", "'options.num_ctx' must be in 1..2147483647"},
  };
  for (const auto& c : cases) {
    ExpectRefused(ParseOllamaChat(WithOptions(c.options), kLimits), c.says, c.options);
    ExpectRefused(
        ParseOllamaGenerate(std::string(R"({"prompt":"p","options":)") + c.options + "}", kLimits),
        c.says, c.options);
  }
}

TEST(OllamaApi, AcceptsOptionsThatOnlySayOff) {
  auto r =
      ParseOllamaChat(WithOptions(R"({"mirostat":0,"mirostat_tau":5.0,"mirostat_eta":0.1,"tfs_z":1,
      "typical_p":1.0,"min_p":0,"repeat_last_n":64,"penalize_newline":true,"num_keep":4,"numa":false,
      "low_vram":false,"logits_all":false,"vocab_only":false,"use_mlock":false,"embedding_only":false,
      "num_ctx":2048})"),
                      kLimits);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(r->gen.temperature.has_value());
  EXPECT_EQ(*r->num_ctx, 2048);
}

TEST(OllamaApi, NumPredictMinusOneAndMinusTwoMeanTheConfiguredCap) {
  for (const char* n : {"-1", "-2"}) {
    auto r = ParseOllamaChat(WithOptions(std::string(R"({"num_predict":)") + n + "}"), kLimits);
    ASSERT_TRUE(r.has_value()) << n;
    EXPECT_FALSE(r->gen.max_tokens.has_value()) << n;  // MakeGenerationJob applies max_new_tokens
  }
  auto zero = ParseOllamaChat(WithOptions(R"({"num_predict":0})"), kLimits);
  ASSERT_TRUE(zero.has_value());
  EXPECT_EQ(*zero->gen.max_tokens, 0u);
  auto seed = ParseOllamaChat(WithOptions(R"({"seed":-1})"), kLimits);
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(*seed->gen.seed, engine::SamplingParams::kRandomSeed);  // Ollama's -1: random
  auto one_stop = ParseOllamaChat(WithOptions(R"({"stop":"END"})"), kLimits);
  ASSERT_TRUE(one_stop.has_value());
  EXPECT_EQ(one_stop->gen.stop, std::vector<std::string>{"END"});
}

TEST(OllamaApi, GenerateIsAOneTurnChatOrARawPrompt) {
  auto r = ParseOllamaGenerate(
      R"({"model":"m","prompt":"why?","system":"be brief","suffix":"","template":"",
      "context":[],"images":[],"format":"json","think":false,"stream":false,"options":{"num_predict":3}})",
      kLimits);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->gen.chat);
  EXPECT_FALSE(r->raw);
  ASSERT_EQ(r->gen.messages.size(), 2u);
  EXPECT_EQ(r->gen.messages[0].role, "system");
  EXPECT_EQ(r->gen.messages[0].content, "be brief");
  EXPECT_EQ(r->gen.messages[1].role, "user");
  EXPECT_EQ(r->gen.messages[1].content, "why?");
  EXPECT_EQ(r->gen.format.json_schema, R"({"type":"object"})");
  EXPECT_FALSE(r->gen.stream);
  EXPECT_EQ(*r->gen.max_tokens, 3u);

  auto raw = ParseOllamaGenerate(R"({"prompt":"<|im_start|>user\nhi","raw":true})", kLimits);
  ASSERT_TRUE(raw.has_value()) << raw.error().ToString();
  EXPECT_FALSE(raw->gen.chat);
  EXPECT_TRUE(raw->raw);
  EXPECT_EQ(raw->gen.prompt, "<|im_start|>user\nhi");
  EXPECT_TRUE(raw->gen.messages.empty());
  EXPECT_TRUE(raw->gen.stream);

  auto no_system = ParseOllamaGenerate(R"({"prompt":"hi"})", kLimits);
  ASSERT_TRUE(no_system.has_value());
  ASSERT_EQ(no_system->gen.messages.size(), 1u);  // the configured system prompt is added later
  EXPECT_FALSE(no_system->load_only);
}

TEST(OllamaApi, RefusesGenerateFieldsItCannotHonour) {
  struct Case {
    const char* body;
    const char* says;
  } cases[] = {
      {R"({"prompt":5})", "'prompt' must be a string"},
      {R"({"prompt":"p","system":1})", "'system' must be a string"},
      {R"({"prompt":"p","raw":"yes"})", "'raw' must be true or false"},
      {R"({"prompt":"p","images":["aGk="]})", "'images' is not supported: llmd serves text only"},
      {R"({"prompt":"p","suffix":"end"})",
       "'suffix' is not supported: llmd does not fill in the middle"},
      {R"({"prompt":"p","template":"{{ .Prompt }}"})",
       "'template' is not supported: llmd applies the model's own chat template"},
      {R"({"prompt":"p","context":[1,2,3]})",
       "'context' is not supported: llmd keeps no context between requests"},
      {R"({"prompt":"p","width":512})", "'width' is for image generation"},
      {R"({"prompt":"p","steps":4})", "'steps' is for image generation"},
      {R"({"prompt":"p","raw":true,"system":"s"})", "'system' cannot be combined with raw:true"},
      {R"({"prompt":"p","raw":true,"format":"json"})", "'format' cannot be combined with raw:true"},
      {R"({"prompt":"p","raw":true,"think":true})", "'think' cannot be combined with raw:true"},
      {R"({"prompt":"p","format":"yaml"})", "'format' must be"},
  };
  for (const auto& c : cases) ExpectRefused(ParseOllamaGenerate(c.body, kLimits), c.says, c.body);
}

TEST(OllamaApi, ParsesEmbedRequests) {
  auto one = ParseOllamaEmbed(
      R"({"model":"e","input":"text","truncate":true,"keep_alive":-1,"dimensions":8,
      "options":{"num_ctx":512}})",
      kLimits);
  ASSERT_TRUE(one.has_value()) << one.error().ToString();
  EXPECT_EQ(*one->model, "e");
  EXPECT_EQ(one->inputs, std::vector<std::string>{"text"});
  EXPECT_EQ(*one->dimensions, 8);
  EXPECT_TRUE(one->truncate);
  auto many = ParseOllamaEmbed(R"({"input":["a","b"]})", kLimits);
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(many->truncate);  // absent: an input over the context is refused, unlike Ollama
  for (const char* load : {R"({"model":"e"})", R"({"input":""})", R"({"input":[]})"}) {
    auto r = ParseOllamaEmbed(load, kLimits);
    ASSERT_TRUE(r.has_value()) << load;
    EXPECT_TRUE(r->inputs.empty()) << load;
  }
  auto legacy = ParseOllamaEmbeddings(R"({"model":"e","prompt":"text"})", kLimits);
  ASSERT_TRUE(legacy.has_value());
  EXPECT_EQ(legacy->inputs, std::vector<std::string>{"text"});
  auto legacy_load = ParseOllamaEmbeddings(R"({"model":"e","prompt":""})", kLimits);
  ASSERT_TRUE(legacy_load.has_value());
  EXPECT_TRUE(legacy_load->inputs.empty());

  struct Case {
    std::string body;
    const char* says;
  } cases[] = {
      {R"({"input":5})", "'input' must be a string or an array of up to 256 strings"},
      {R"({"input":["a",5]})", "'input' must be a string or an array of strings"},
      {R"({"input":["a",""]})", "'input[1]' is empty"},
      {std::string(R"({"input":"bad )") + "\xff" + R"("})",
       "not valid JSON"},  // the JSON parser checks UTF-8
      {R"({"input":"a","truncate":"no"})", "'truncate' must be true or false"},
      {R"({"input":"a","dimensions":0})", "'dimensions' must be in 1.."},
      {R"({"input":"a","options":{"temperature":0}})",
       "'options.temperature' does not apply to embeddings"},
      {R"({"input":"a","options":{"num_gpu":1}})",
       "'options.num_gpu' is set when llmd loads the model"},
      {R"({"input":"a","options":{"num_ctx":9999}})",
       "'options.num_ctx' is 9999, more than the context"},
      {R"({"input":"a","model":1})", "'model' must be a string"},
  };
  for (const auto& c : cases) ExpectRefused(ParseOllamaEmbed(c.body, kLimits), c.says, c.body);
  ExpectRefused(ParseOllamaEmbeddings(R"({"prompt":["a"]})", kLimits), "'prompt' must be a string",
                "prompt array");
}

TEST(OllamaApi, ParsesShowRequests) {
  auto r = ParseOllamaShow(R"({"model":"m","verbose":true})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->verbose);
  auto old = ParseOllamaShow(R"({"name":"m"})");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->model, "m");
  ExpectRefused(ParseOllamaShow("{}"), "'model' is required", "{}");
  ExpectRefused(ParseOllamaShow(R"({"model":"m","verbose":1})"), "'verbose' must be true or false",
                "verbose");
}

// --- rendering

TEST(OllamaApi, TimesAreRfc3339InUtcWithNanoseconds) {
  using std::chrono::nanoseconds;
  using std::chrono::system_clock;
  auto at = [](int64_t ns) {
    return system_clock::time_point(
        std::chrono::duration_cast<system_clock::duration>(nanoseconds(ns)));
  };
  EXPECT_EQ(Rfc3339Nanos(at(1700000000123456789)), "2023-11-14T22:13:20.123456789Z");
  EXPECT_EQ(Rfc3339Nanos(at(5)), "1970-01-01T00:00:00.000000005Z");
}

engine::ParsedReply Reply(std::string content, std::string reasoning = "",
                          std::vector<chat::ToolCall> calls = {}) {
  return engine::ParsedReply{std::move(content), std::move(reasoning), std::move(calls)};
}

TEST(OllamaApi, ChatChunksCarryTheMessageAndGenerateChunksTheResponse) {
  const OllamaReplyContext chat{true, "m", "2025-01-01T00:00:00.000000000Z"};
  json c = OllamaChunk(chat, Reply("Hel"));
  EXPECT_EQ(c,
            json::parse(R"({"model":"m","created_at":"2025-01-01T00:00:00.000000000Z","done":false,
                               "message":{"role":"assistant","content":"Hel"}})"));
  json t = OllamaChunk(chat, Reply("", "hmm"));
  EXPECT_EQ(t["message"]["thinking"], "hmm");
  EXPECT_EQ(t["message"]["content"], "");

  const OllamaReplyContext generate{false, "m", "2025-01-01T00:00:00.000000000Z"};
  json g = OllamaChunk(generate, Reply("lo", "why"));
  EXPECT_EQ(g["response"], "lo");
  EXPECT_EQ(g["thinking"], "why");
  EXPECT_FALSE(g.contains("message"));
  EXPECT_FALSE(OllamaChunk(generate, Reply("x")).contains("thinking"));
}

TEST(OllamaApi, ToolCallArgumentsAreObjects) {
  const json calls = OllamaToolCalls(
      {{"call_1", "get_weather", R"({"city":"Paris"})"}, {"", "f", "not json"}, {"", "g", "[1]"}});
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(
      calls[0],
      json::parse(
          R"({"id":"call_1","function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}})"));
  EXPECT_EQ(calls[1]["function"]["arguments"], json::object());
  EXPECT_FALSE(calls[1].contains("id"));
  EXPECT_EQ(calls[2]["function"]["arguments"], json::object());
  const OllamaReplyContext chat{true, "m", "t"};
  json c = OllamaChunk(chat, Reply("", "", {{"call_1", "get_weather", R"({"city":"Rome"})"}}));
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"]["city"], "Rome");
}

TEST(OllamaApi, TheFinalObjectHasTheDurationsInNanoseconds) {
  engine::GenerationStats st;
  st.prompt_tokens = 30;
  st.cached_tokens = 10;
  st.prefill_ms = 12.5;
  st.decode_ms = 100.25;
  st.generated_tokens = 8;
  st.finish_reason = engine::FinishReason::kLength;
  const OllamaReplyContext chat{true, "m", "t"};
  json f =
      OllamaFinal(chat, Reply("answer", "thought"), st, 123456789, OllamaDoneReason(st, false));
  EXPECT_TRUE(f["done"].get<bool>());
  EXPECT_EQ(f["done_reason"], "length");
  EXPECT_EQ(f["total_duration"], 123456789);
  EXPECT_EQ(f["load_duration"], 0);
  EXPECT_EQ(f["prompt_eval_count"], 20);  // the cached prompt tokens were not evaluated
  EXPECT_EQ(f["prompt_eval_duration"], 12500000);
  EXPECT_EQ(f["eval_count"], 8);
  EXPECT_EQ(f["eval_duration"], 100250000);
  EXPECT_EQ(f["message"]["content"], "answer");
  EXPECT_EQ(f["message"]["thinking"], "thought");
  EXPECT_FALSE(f.contains("logprobs"));

  const OllamaReplyContext generate{false, "m", "t"};
  json g = OllamaFinal(generate, Reply(""), st, 1, "stop");
  EXPECT_EQ(g["response"], "");
  EXPECT_FALSE(g.contains("context"));  // llmd keeps no context tokens

  st.finish_reason = engine::FinishReason::kStop;
  EXPECT_EQ(OllamaDoneReason(st, false), "stop");
  EXPECT_EQ(OllamaDoneReason(st, true), "content_filter");
  EXPECT_EQ(OllamaLoadReply(chat, false),
            json::parse(R"({"model":"m","created_at":"t","done":true,"done_reason":"load",
                                                 "message":{"role":"assistant","content":""}})"));
  EXPECT_EQ(OllamaLoadReply(chat, true)["done_reason"], "unload");  // keep_alive 0
}

TEST(OllamaApi, LogprobsHaveOllamasShape) {
  const json lp = OllamaLogprobs({{"Hi", -0.5f, {{"Hi", -0.5f}, {"Yo", -1.0f}}}});
  EXPECT_EQ(lp, json::parse(R"([{"token":"Hi","logprob":-0.5,"bytes":[72,105],
      "top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},{"token":"Yo","logprob":-1.0,"bytes":[89,111]}]}])"));
  const OllamaReplyContext chat{true, "m", "t"};
  EXPECT_EQ(OllamaChunk(chat, Reply("Hi"), {{"Hi", -0.5f, {}}})["logprobs"][0]["token"], "Hi");
}

TEST(OllamaApi, EmbeddingsHaveOllamasShape) {
  const json e = json::parse(RenderOllamaEmbed("e", {{0.5f, -0.5f}, {1.0f, 0.0f}}, 42, 7));
  EXPECT_EQ(e, json::parse(R"({"model":"e","embeddings":[[0.5,-0.5],[1.0,0.0]],"total_duration":42,
                               "load_duration":0,"prompt_eval_count":7})"));
  EXPECT_EQ(json::parse(RenderOllamaEmbeddings({0.25f})), json::parse(R"({"embedding":[0.25]})"));
  EXPECT_EQ(json::parse(RenderOllamaEmbeddings({})), json::parse(R"({"embedding":[]})"));
}

// --- model facts

TEST(OllamaApi, NamesSizesAndQuantizationsAsOllama) {
  EXPECT_EQ(ParameterSize(751632384), "751.63M");
  EXPECT_EQ(ParameterSize(7600000000), "7.6B");
  EXPECT_EQ(ParameterSize(8000000000), "8B");
  EXPECT_EQ(ParameterSize(3000000), "3M");
  EXPECT_EQ(ParameterSize(512000), "512K");
  EXPECT_EQ(ParameterSize(999), "999");
}

std::string SmallGguf() {
  testing::GgufBuilder b;
  b.Header(2, 8)
      .KvString("general.architecture", "qwen3")
      .KvU32("general.file_type", 7)
      .KvU32("qwen3.context_length", 40960)
      .KvString("tokenizer.chat_template", "{% if tools %}...{% endif %}<think>")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "b"})
      .KvI32Array("qwen3.layer_heads", {4, 4})
      .Str("general.ratio")
      .U32(testing::GgufBuilder::kF32)
      .U32(0x3F000000)  // 0.5f
      .Str("general.epsilon")
      .U32(testing::GgufBuilder::kF32)
      .U32(std::bit_cast<uint32_t>(1e-6f))
      .TensorInfo("w", {32, 4}, 0, 0)
      .TensorInfo("b", {10}, 0, 512)
      .Align()
      .Zeros(552);  // F32 data: 128 + 10 elements
  return b.bytes();
}

format::GgufMetadata SmallGgufMetadata() {
  auto metadata = format::ReadGgufMetadata(*format::NewMemoryFile(SmallGguf()));
  EXPECT_TRUE(metadata.has_value()) << metadata.error().ToString();
  return metadata.has_value() ? std::move(*metadata) : format::GgufMetadata{};
}

// format::ReadGgufMetadata's own tests are in src/format/gguf_metadata_test.cc; here, how
// Ollama's model_info shows what it read.
TEST(OllamaApi, ModelInfoShowsEveryKeyAsOllama) {
  const json info = OllamaModelInfo(SmallGgufMetadata());
  EXPECT_EQ(info["general.architecture"], "qwen3");
  EXPECT_EQ(info["general.file_type"], 7);
  EXPECT_EQ(info["qwen3.context_length"], 40960);
  EXPECT_TRUE(info["tokenizer.ggml.tokens"].is_null());  // the vocabulary is not repeated
  EXPECT_EQ(info["qwen3.layer_heads"], json::array({4, 4}));
  EXPECT_EQ(info["general.ratio"], 0.5);
  EXPECT_EQ(info["general.epsilon"].dump(),
            "1e-06");  // the float's shortest form, as Ollama shows it
  EXPECT_EQ(info["general.parameter_count"], 138);  // counted: the file does not say it
  EXPECT_FALSE(info.contains("tokenizer.chat_template"));

  format::GgufMetadata said;
  said.parameter_count = 138;
  said.values = {{"general.parameter_count", uint64_t{8000000000}},
                 {"a.signed", int64_t{-3}},
                 {"a.flag", true},
                 {"a.double", 0.25},
                 {"a.nan", std::numeric_limits<double>::quiet_NaN()},
                 {"a.inf32", std::numeric_limits<float>::infinity()},
                 {"a.mixed", std::vector<format::GgufScalar>{uint64_t{1}, int64_t{-1}, 1.5f, false}},
                 {"a.long", std::monostate{}}};
  EXPECT_EQ(OllamaModelInfo(said).dump(),
            R"({"a.double":0.25,"a.flag":true,"a.inf32":null,"a.long":null,"a.mixed":[1,-1,1.5,false],)"
            R"("a.nan":null,"a.signed":-3,"general.parameter_count":8000000000})");
}

OllamaModel Model(bool embeddings) {
  OllamaModel m;
  m.name = "qwen";
  m.modified_at = "2025-01-01T00:00:00.000000000Z";
  m.file_bytes = 1000;
  m.memory_bytes = 3000;
  m.vram_bytes = 2000;
  m.digest = "00000000000000ab";
  m.embeddings = embeddings;
  m.context_length = 2048;
  m.facts = SmallGgufMetadata();
  return m;
}

TEST(OllamaApi, TagsAndPsDescribeTheLoadedModels) {
  const json tags = OllamaTagsEntry(Model(false));
  EXPECT_EQ(
      tags,
      json::parse(R"({"name":"qwen","model":"qwen","modified_at":"2025-01-01T00:00:00.000000000Z",
      "size":1000,"digest":"00000000000000ab","details":{"parent_model":"","format":"gguf","family":"qwen3",
      "families":["qwen3"],"parameter_size":"138","quantization_level":"Q8_0"}})"));
  const json ps = OllamaPsEntry(Model(false));
  EXPECT_EQ(ps["size"], 3000);
  EXPECT_EQ(ps["size_vram"], 2000);
  EXPECT_EQ(ps["context_length"], 2048);
  EXPECT_EQ(ps["details"]["format"], "gguf");
  EXPECT_TRUE(ps["expires_at"].is_string());
}

TEST(OllamaApi, ShowHasDetailsModelInfoAndCapabilities) {
  config::DaemonConfig c;
  const json show = json::parse(RenderOllamaShow(Model(false), c));
  EXPECT_EQ(show["details"]["family"], "qwen3");
  EXPECT_EQ(show["details"]["quantization_level"], "Q8_0");
  EXPECT_EQ(show["capabilities"], json::parse(R"(["completion","tools","thinking"])"));
  EXPECT_EQ(show["model_info"]["qwen3.context_length"],
            2048);  // the loaded context, not the file's 40960
  EXPECT_EQ(show["model_info"]["general.architecture"], "qwen3");
  EXPECT_NE(show["parameters"].get<std::string>().find("num_ctx"), std::string::npos);
  EXPECT_NE(show["parameters"].get<std::string>().find("temperature                    0.7"),
            std::string::npos);
  EXPECT_NE(show["modelfile"].get<std::string>().find("FROM qwen"), std::string::npos);
  EXPECT_EQ(show["template"], "{% if tools %}...{% endif %}<think>");
  EXPECT_EQ(show["license"], "");
  EXPECT_EQ(show["modified_at"], "2025-01-01T00:00:00.000000000Z");

  const json embed = json::parse(RenderOllamaShow(Model(true), c));
  EXPECT_EQ(embed["capabilities"], json::parse(R"(["embedding"])"));
  OllamaModel plain = Model(false);
  plain.facts.chat_template.clear();  // the ChatML fallback: no tools, no thinking
  EXPECT_EQ(OllamaCapabilities(plain), std::vector<std::string>{"completion"});
}

// A model with a manifest: show says what a request that sets nothing gets from it.
TEST(OllamaApi, ShowGivesTheManifestsSettingsOverTheDaemons) {
  config::DaemonConfig c;
  config::ModelGenerationDefaults terse;
  terse.context_tokens = 100000;  // more than the model holds: a request gets the model's
  terse.temperature = 0.2f;
  terse.system = "Be terse.";
  terse.stop = {"<x>"};
  c.model_defaults["qwen"] = terse;
  const json show = json::parse(RenderOllamaShow(Model(false), c));
  const std::string parameters = show["parameters"];
  EXPECT_NE(parameters.find("num_ctx                        2048"), std::string::npos) << parameters;
  EXPECT_NE(parameters.find("temperature                    0.2"), std::string::npos) << parameters;
  EXPECT_NE(parameters.find("stop                           \"<x>\""), std::string::npos) << parameters;
  EXPECT_EQ(show["system"], "Be terse.");
  EXPECT_NE(show["modelfile"].get<std::string>().find("SYSTEM \"\"\"Be terse.\"\"\""), std::string::npos);
  c.model_defaults["qwen"].context_tokens = 512;
  const json smaller = json::parse(RenderOllamaShow(Model(false), c));
  EXPECT_NE(smaller["parameters"].get<std::string>().find("num_ctx                        512"), std::string::npos);
  EXPECT_EQ(smaller["model_info"]["qwen3.context_length"], 2048) << "the model's own context";
}

}  // namespace
}  // namespace llmd::http
