// What agents call on the OpenAI API, against the real daemon on the tiny random-weight model
// with the real Qwen3 template: tools (auto, required, named; streamed and not; a tool result
// in the history), structured output, log-probabilities, several choices and logit_bias.
// Random weights say nothing sensible, so every test states structure: a required call is
// there and parses, a schema's bounds hold, the stream adds up to the final message.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using nlohmann::json;

const json kWeatherTool = json::parse(R"([{"type":"function","function":{"name":"get_weather",
  "description":"The weather in a city","parameters":{"type":"object","properties":{
  "city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"get_time","description":"The time in a zone","parameters":{
  "type":"object","properties":{"zone":{"type":"integer","minimum":-12,"maximum":12}},
  "required":["zone"],"additionalProperties":false}}}])");

json Parse(const HttpReply& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.status << " " << r.body;
  return j;
}

json Body(const std::string& user, int max_tokens, json extra = json::object()) {
  json b = {{"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", max_tokens}};
  b.update(extra);
  return b;
}

// The SSE events of a streamed body, parsed, without [DONE].
std::vector<json> Events(const std::string& body) {
  std::vector<json> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    if (data != "[DONE]") out.push_back(json::parse(data));
    at = end;
  }
  return out;
}

class AgentApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new HttpDaemon({"--rate-limit", "100000", "--parallel", "2", "--context", "2048", "--models",
                              "embed=" + TinyEmbedModelPath(), "--embedding-models", "embed"});
  }
  static void TearDownTestSuite() { delete daemon_; }
  static HttpReply Chat(const json& body) { return daemon_->Unix("POST", "/v1/chat/completions", body.dump()); }
  static HttpDaemon* daemon_;
};
HttpDaemon* AgentApi::daemon_ = nullptr;

void ExpectWeatherCall(const json& call) {
  EXPECT_EQ(call["type"], "function");
  EXPECT_TRUE(call["id"].is_string() && !call["id"].get<std::string>().empty()) << call;
  EXPECT_EQ(call["function"]["name"], "get_weather") << call;
  json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << call;
  EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Rome") << args;
}

TEST_F(AgentApi, RequiredAndNamedToolChoicesYieldOneParseableCallAtOnce) {
  ASSERT_TRUE(daemon_->process().ready());
  for (json choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "get_weather"}}}}}) {
    for (int seed = 1; seed <= 3; ++seed) {
      auto r = Chat(Body("What is the weather in Paris?", 96,
                         {{"tools", kWeatherTool}, {"tool_choice", choice}, {"parallel_tool_calls", false},
                          {"seed", seed}, {"temperature", 1.0}}));
      ASSERT_EQ(r.status, 200) << r.body;
      json j = Parse(r);
      const json& c = j["choices"][0];
      EXPECT_EQ(c["finish_reason"], "tool_calls") << r.body;
      EXPECT_TRUE(c["message"]["content"].is_null()) << r.body;
      ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r.body;
      const json& call = c["message"]["tool_calls"][0];
      if (choice.is_object()) {
        ExpectWeatherCall(call);  // named: exactly that function
      } else {
        EXPECT_TRUE(call["function"]["name"] == "get_weather" || call["function"]["name"] == "get_time") << call;
        EXPECT_TRUE(json::accept(call["function"]["arguments"].get<std::string>())) << call;
      }
      // Nothing before the call: the call's tokens are the whole reply.
      EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 96) << r.body;
    }
  }
}

TEST_F(AgentApi, AStreamedCallSendsIdAndNameOnceThenArgumentsThatAddUp) {
  auto r = Chat(Body("Weather?", 96,
                     {{"tools", kWeatherTool}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                      {"parallel_tool_calls", false}, {"stream", true}, {"seed", 7}}));
  ASSERT_EQ(r.status, 200) << r.body;
  std::string id, name, arguments;
  int heads = 0;
  json finish;
  for (const json& e : Events(r.body)) {
    const json& c = e["choices"][0];
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    if (!c["delta"].contains("tool_calls")) {
      EXPECT_FALSE(c["delta"].contains("content") && !c["delta"]["content"].get<std::string>().empty()) << e;
      continue;
    }
    for (const json& t : c["delta"]["tool_calls"]) {
      EXPECT_EQ(t["index"], 0);
      if (t.contains("id")) {
        ++heads;
        id = t["id"];
        name = t["function"]["name"];
        EXPECT_EQ(t["type"], "function");
      } else {
        EXPECT_FALSE(t["function"].contains("name")) << e;
      }
      arguments += t["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(finish, "tool_calls");
  json call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
  ExpectWeatherCall(call);
}

TEST_F(AgentApi, AutoWithToolsAnswersTextOrACallAndNoneNeverCalls) {
  for (int seed = 1; seed <= 3; ++seed) {
    auto r = Chat(Body("Hello", 24, {{"tools", kWeatherTool}, {"seed", seed}}));
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = Parse(r);
    const json& c = j["choices"][0];
    if (c["message"].contains("tool_calls")) {
      EXPECT_EQ(c["finish_reason"], "tool_calls");
    } else {
      EXPECT_TRUE(c["message"]["content"].is_string()) << r.body;
    }
    auto none = Chat(Body("Hello", 24, {{"tools", kWeatherTool}, {"tool_choice", "none"}, {"seed", seed}}));
    ASSERT_EQ(none.status, 200) << none.body;
    EXPECT_FALSE(Parse(none)["choices"][0]["message"].contains("tool_calls")) << none.body;
  }
}

TEST_F(AgentApi, AToolResultInTheHistoryIsRenderedAndAnswered) {
  json messages = {{{"role", "user"}, {"content", "Weather in Rome?"}},
                   {{"role", "assistant"},
                    {"content", nullptr},
                    {"tool_calls",
                     {{{"id", "call_1"}, {"type", "function"},
                       {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Rome"})"}}}}}}},
                   {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny, 24 C"}}};
  auto r = Chat({{"messages", messages}, {"tools", kWeatherTool}, {"max_tokens", 8}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = Parse(r);
  // The template's tool rendering: the prompt holds the tools, the call and its result.
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 150) << r.body;
}

TEST_F(AgentApi, AJsonSchemaIsEnforcedAndABadOneIsA400NamingIt) {
  const json schema = json::parse(R"({"type":"object","properties":{"mood":{"type":"string","enum":["good","bad"]},
    "score":{"type":"integer","minimum":1,"maximum":5},"ok":{"type":"boolean"}},
    "required":["mood","score","ok"],"additionalProperties":false})");
  for (int seed = 1; seed <= 3; ++seed) {
    auto r = Chat(Body("Rate it", 128,
                       {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "rating"}, {"strict", true}, {"schema", schema}}}}},
                        {"seed", seed}, {"temperature", 1.0}}));
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = Parse(r);
    const json& c = j["choices"][0];
    EXPECT_EQ(c["finish_reason"], "stop") << r.body;
    json answer = json::parse(c["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(answer.is_object()) << r.body;
    EXPECT_TRUE(answer["mood"] == "good" || answer["mood"] == "bad") << answer;
    EXPECT_GE(answer["score"].get<int>(), 1);
    EXPECT_LE(answer["score"].get<int>(), 5);
    EXPECT_TRUE(answer["ok"].is_boolean());
    EXPECT_EQ(answer.size(), 3u);
  }
  auto object = Chat(Body("JSON please", 128, {{"response_format", {{"type", "json_object"}}}, {"seed", 2}}));
  ASSERT_EQ(object.status, 200) << object.body;
  const json oj = Parse(object);
  const json& oc = oj["choices"][0];
  if (oc["finish_reason"] == "stop") {  // an unbounded object may run out of tokens
    EXPECT_TRUE(json::parse(oc["message"]["content"].get<std::string>(), nullptr, false).is_object()) << object.body;
  }
  auto bad = Chat(Body("x", 8, {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"$ref", "#/definitions/missing"}}}}}}}}));
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("schema"), std::string::npos) << bad.body;
}

TEST_F(AgentApi, LogprobsComeInOpenAisShapeAndLogitBiasBansAToken) {
  auto r = Chat(Body("Say something", 4, {{"logprobs", true}, {"top_logprobs", 3}, {"temperature", 0}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = Parse(r);
  const json& content = j["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 4u) << r.body;
  std::string text;
  for (const json& t : content) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    ASSERT_EQ(t["top_logprobs"].size(), 3u);
    // Greedy: the chosen token is the most likely one.
    EXPECT_NEAR(t["top_logprobs"][0]["logprob"].get<double>(), t["logprob"].get<double>(), 1e-4) << t;
    EXPECT_GE(t["top_logprobs"][0]["logprob"].get<double>(), t["top_logprobs"][1]["logprob"].get<double>());
    text += t["token"].get<std::string>();
  }
  EXPECT_EQ(text, j["choices"][0]["message"]["content"]);

  // Ban the first token greedy picks: the answer starts otherwise.
  auto tokens = daemon_->Unix("POST", "/tokenize", json{{"content", content[0]["token"]}}.dump());
  std::vector<int> ids;
  if (tokens.status == 200) {
    const json parsed = Parse(tokens);
    for (const json& t : parsed["tokens"]) ids.push_back(t.get<int>());
  }
  ASSERT_EQ(ids.size(), 1u) << tokens.body;
  auto banned = Chat(Body("Say something", 4, {{"logprobs", true}, {"temperature", 0},
                                               {"logit_bias", {{std::to_string(ids[0]), -100}}}}));
  ASSERT_EQ(banned.status, 200) << banned.body;
  EXPECT_NE(Parse(banned)["choices"][0]["logprobs"]["content"][0]["token"], content[0]["token"]) << banned.body;
}

// ignore_eos (llama-server's extension): with the end-of-turn tokens pushed to the top, the
// answer ends at once; with ignore_eos as well it runs to max_tokens.
TEST_F(AgentApi, IgnoreEosRunsToMaxTokensWhereTheModelWouldStop) {
  std::vector<int> ends;
  for (const char* text : {"<|im_end|>", "<|endoftext|>"}) {
    auto t = daemon_->Unix("POST", "/tokenize", json{{"content", text}, {"parse_special", true}}.dump());
    ASSERT_EQ(t.status, 200) << t.body;
    const json parsed = Parse(t);
    ASSERT_EQ(parsed["tokens"].size(), 1u) << t.body;
    ends.push_back(parsed["tokens"][0].get<int>());
  }
  json bias = json::object();
  for (int id : ends) bias[std::to_string(id)] = 100;
  auto stops = Chat(Body("Say something", 8, {{"temperature", 0}, {"logit_bias", bias}}));
  ASSERT_EQ(stops.status, 200) << stops.body;
  EXPECT_EQ(Parse(stops)["choices"][0]["finish_reason"], "stop") << stops.body;
  EXPECT_LE(Parse(stops)["usage"]["completion_tokens"].get<int>(), 1) << stops.body;

  auto runs = Chat(Body("Say something", 8, {{"temperature", 0}, {"logit_bias", bias}, {"ignore_eos", true}}));
  ASSERT_EQ(runs.status, 200) << runs.body;
  EXPECT_EQ(Parse(runs)["choices"][0]["finish_reason"], "length") << runs.body;
  EXPECT_EQ(Parse(runs)["usage"]["completion_tokens"], 8) << runs.body;
  EXPECT_EQ(Chat(Body("Say something", 8, {{"ignore_eos", "yes"}})).status, 400);
}

TEST_F(AgentApi, SeveralChoicesEachHaveTheirIndexAndShareThePrompt) {
  auto r = Chat(Body("Name a colour", 6, {{"n", 2}, {"seed", 3}, {"temperature", 1.0}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = Parse(r);
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  auto s = Chat(Body("Name a colour", 6, {{"n", 2}, {"stream", true}}));
  ASSERT_EQ(s.status, 200) << s.body;
  std::set<int> finished;
  for (const json& e : Events(s.body)) {
    for (const json& c : e["choices"]) {
      if (!c["finish_reason"].is_null()) finished.insert(c["index"].get<int>());
    }
  }
  EXPECT_EQ(finished, (std::set<int>{0, 1})) << s.body;
}

// Decodes the base64 of little-endian float32s.
std::vector<float> FloatsFromBase64(const std::string& text) {
  std::string bytes;
  uint32_t chunk = 0;
  int bits = 0;
  for (char c : text) {
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = std::strchr(alphabet, c);
    if (c == '=' || at == nullptr) break;
    chunk = (chunk << 6) | static_cast<uint32_t>(at - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((chunk >> bits) & 0xFF);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

TEST_F(AgentApi, EmbeddingsAreUnitVectorsPerInputInFloatOrBase64) {
  auto r = daemon_->Unix("POST", "/v1/embeddings", json{{"model", "embed"}, {"input", {"a river", "a mountain", "a river"}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = Parse(r);
  ASSERT_EQ(j["data"].size(), 3u);
  std::vector<std::vector<float>> vectors;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["data"][i]["index"], i);
    vectors.push_back(j["data"][i]["embedding"].get<std::vector<float>>());
    double norm = 0;
    for (float v : vectors.back()) norm += static_cast<double>(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-3);
  }
  EXPECT_EQ(vectors[0].size(), 128u) << "the tiny model's n_embd";
  EXPECT_EQ(vectors[0], vectors[2]);  // the same text, the same vector
  EXPECT_NE(vectors[0], vectors[1]);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 3);

  auto b64 = daemon_->Unix("POST", "/v1/embeddings",
                           json{{"model", "embed"}, {"input", "a river"}, {"encoding_format", "base64"}}.dump());
  ASSERT_EQ(b64.status, 200) << b64.body;
  std::vector<float> decoded = FloatsFromBase64(Parse(b64)["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(decoded.size(), vectors[0].size());
  for (size_t i = 0; i < decoded.size(); ++i) EXPECT_NEAR(decoded[i], vectors[0][i], 1e-6);

  // The chat model does not embed, the embedding model does not chat, dimensions are its own.
  auto chat_model = daemon_->Unix("POST", "/v1/embeddings", json{{"input", "x"}}.dump());
  EXPECT_EQ(chat_model.status, 400) << chat_model.body;
  EXPECT_NE(chat_model.body.find("embedding_models"), std::string::npos) << chat_model.body;
  auto no_chat = Chat(Body("hi", 4, {{"model", "embed"}}));
  EXPECT_EQ(no_chat.status, 400) << no_chat.body;
  auto dims = daemon_->Unix("POST", "/v1/embeddings", json{{"model", "embed"}, {"input", "x"}, {"dimensions", 64}}.dump());
  EXPECT_EQ(dims.status, 400) << dims.body;
  auto tokens = daemon_->Unix("POST", "/v1/embeddings", json{{"model", "embed"}, {"input", {1, 2, 3}}}.dump());
  EXPECT_EQ(tokens.status, 400) << tokens.body;

  // Ollama's truncate: an input over num_ctx is refused unless the client asks for the cut.
  const json longer = {{"model", "embed"}, {"input", "one two three four five six seven eight nine ten eleven twelve"},
                       {"options", {{"num_ctx", 8}}}};
  auto refused = daemon_->Unix("POST", "/api/embed", longer.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("more than the context of 8"), std::string::npos) << refused.body;
  json cut_request = longer;
  cut_request["truncate"] = true;
  auto cut = daemon_->Unix("POST", "/api/embed", cut_request.dump());
  ASSERT_EQ(cut.status, 200) << cut.body;
  EXPECT_EQ(Parse(cut)["prompt_eval_count"], 8) << cut.body;
  ASSERT_EQ(Parse(cut)["embeddings"].size(), 1u) << cut.body;
  EXPECT_EQ(Parse(cut)["embeddings"][0].size(), vectors[0].size());
}

TEST_F(AgentApi, TokenizeAndDetokenizeRoundTrip) {
  auto t = daemon_->Unix("POST", "/tokenize", json{{"content", "Hello world<|im_end|>"}, {"with_pieces", true}}.dump());
  ASSERT_EQ(t.status, 200) << t.body;
  json pieces = Parse(t)["tokens"];
  ASSERT_GE(pieces.size(), 3u);
  EXPECT_EQ(pieces.back()["piece"], "<|im_end|>");  // parse_special is on by default
  json ids = json::array();
  for (const json& p : pieces) ids.push_back(p["id"]);
  auto d = daemon_->Unix("POST", "/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(Parse(d)["content"], "Hello world<|im_end|>");
  auto plain = daemon_->Unix("POST", "/tokenize", json{{"content", "<|im_end|>"}, {"parse_special", false}}.dump());
  EXPECT_GT(Parse(plain)["tokens"].size(), 1u);  // typed as text, not the control token
  EXPECT_EQ(daemon_->Unix("POST", "/detokenize", json{{"tokens", {-1}}}.dump()).status, 400);
  EXPECT_EQ(daemon_->Unix("POST", "/detokenize", json{{"tokens", {999999999}}}.dump()).status, 400);
  EXPECT_EQ(daemon_->Unix("POST", "/tokenize", json{{"content", 5}}.dump()).status, 400);
}

TEST(AgentApiListeners, OllamaListenServesTheSameApiUnderTheSameKeyRules) {
  HttpDaemon d({"--ollama-listen", "127.0.0.1:0"});
  ASSERT_TRUE(d.process().ready());
  std::smatch m;
  const std::string log = d.process().log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex("ollama=127\\.0\\.0\\.1:([0-9]+)"))) << log;
  const std::string base = "'http://127.0.0.1:" + m[1].str();
  const std::string key = "-H 'Authorization: Bearer " + std::string(HttpDaemon::kApiKey) + "' ";
  auto version = Curl(d.process().dir(), key + base + "/api/version'", "");
  EXPECT_EQ(version.status, 200) << version.body;
  EXPECT_TRUE(Parse(version).contains("version"));
  auto no_key = Curl(d.process().dir(), base + "/api/tags'", "");
  EXPECT_EQ(no_key.status, 401) << no_key.body;
  EXPECT_TRUE(Parse(no_key)["error"].is_string()) << "Ollama's error shape: " << no_key.body;
  auto foreign = Curl(d.process().dir(), key + "-H 'Origin: http://evil.example' " + base + "/api/tags'", "");
  EXPECT_EQ(foreign.status, 403) << foreign.body;
}

TEST(AgentApiThinking, AModelNamedInThinkingModelsThinksUnlessTheRequestSays) {
  HttpDaemon d({"--thinking-models", "tiny-q8_0"});
  ASSERT_TRUE(d.process().ready());
  auto prompt_tokens = [&](json extra) {
    auto r = d.Unix("POST", "/v1/chat/completions", Body("Hi", 1, std::move(extra)).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return Parse(r)["usage"]["prompt_tokens"].get<int>();
  };
  const int by_default = prompt_tokens(json::object());
  const int on = prompt_tokens({{"chat_template_kwargs", {{"enable_thinking", true}}}});
  const int off = prompt_tokens({{"chat_template_kwargs", {{"enable_thinking", false}}}});
  // Qwen3's template closes an empty think block in the prompt only when thinking is off.
  EXPECT_EQ(by_default, on);
  EXPECT_GT(off, on);
}

TEST(AgentApiTemplates, AModelWhoseTemplateCannotCallToolsSays400) {
  HttpDaemon d({"--model", std::string(LLMD_TEST_MODEL_DIR) + "/tiny-notools-q8_0.gguf", "--system-prompt", ""});
  ASSERT_TRUE(d.process().ready());
  auto r = d.Unix("POST", "/v1/chat/completions", Body("Hi", 8, {{"tools", kWeatherTool}}).dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("cannot call tools"), std::string::npos) << r.body;
  auto plain = d.Unix("POST", "/v1/chat/completions", Body("Hi", 4).dump());
  EXPECT_EQ(plain.status, 200) << plain.body;
}

}  // namespace
}  // namespace llmd::testing
