// The same greedy request gives the same text whatever the cache holds, on the real engine,
// for the dense tiny model and the hybrid one (Gated DeltaNet + attention): sent again and
// again, after other questions on the same system prompt, batched with others, and through
// every API that can say the same thing (the native protocol, OpenAI chat, Responses,
// Anthropic Messages, Ollama). The cold answer, from a daemon that has served nothing, is the
// reference. docs/architecture.md ("What the cached path guarantees") says which comparisons
// hold exactly and why. Every daemon here has the default context (--context 0, after the
// harness's 1024): one KV pool the sequences share, where a step's sequences meet in one
// micro-batch and attend over each other's cells, masked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "llmd/client.h"
#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kSystems = {"Be brief and kind.", "Be brief and kind!", "You are a helpful assistant.",
                                           "Answer like a pirate, in one sentence, and never break character."};
const std::vector<std::string> kQuestions = {"Say hi.", "What is two plus two?", "Name a colour."};
constexpr int kTokens = 16;

struct Answer {
  std::string text;
  int cached = -1;
  int prompt = -1;
};

// OpenAI chat/completions, greedy, the repeat penalty off (it would be the same either way;
// off, nothing but the cache can change the text).
Answer Chat(HttpDaemon& d, const std::string& system, const std::string& question) {
  const json body = {{"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", question}}}},
                     {"max_tokens", kTokens},
                     {"temperature", 0},
                     {"repeat_penalty", 1.0}};
  HttpReply r = d.Unix("POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return {};
  const json j = json::parse(r.body);
  return {j["choices"][0]["message"]["content"].get<std::string>(),
          j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), j["usage"]["prompt_tokens"].get<int>()};
}

// What the question gets from a daemon that has served nothing.
std::string Cold(const std::string& model, const std::string& system, const std::string& question) {
  HttpDaemon fresh({"--rate-limit", "100000", "--context", "0"}, model);
  EXPECT_TRUE(fresh.process().ready()) << fresh.process().log();
  return Chat(fresh, system, question).text;
}

class SameAnswer : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Model() const { return GetParam() == "dense" ? TinyModelPath() : Qwen35TinyPath(); }
};

// The case this test was written for: three identical requests in a row on a hybrid model
// gave one text, then another (a checkpoint restored where the cold prefill had not cut).
// Every system prompt with every question, three times, after all that came before.
TEST_P(SameAnswer, EveryQuestionSentThreeTimesGivesItsColdAnswer) {
  HttpDaemon d({"--rate-limit", "100000", "--context", "0"}, Model());
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  int reused = 0;
  for (const auto& system : kSystems) {
    for (const auto& question : kQuestions) {
      const std::string cold = Cold(Model(), system, question);
      for (int send = 1; send <= 3; ++send) {
        const Answer a = Chat(d, system, question);
        EXPECT_EQ(a.text, cold) << "'" << system << "' / '" << question << "', send " << send << " (cached "
                                << a.cached << ")";
        reused += a.cached > 0;
        // Dense: a resend samples from the logits its last token gave the first time, kept
        // with the memory (a hybrid's recurrent state has moved on: it decodes that token again).
        if (GetParam() == "dense" && send > 1) EXPECT_EQ(a.cached, a.prompt) << "send " << send;
      }
    }
  }
  EXPECT_GE(reused, 24) << "every resend came from the cache";
}

// One question in a step with 1, 2 and 3 others, sharing its system prompt or not.
TEST_P(SameAnswer, ARequestBatchedWithOthersGivesItsColdAnswer) {
  const std::string cold = Cold(Model(), kSystems[3], kQuestions[1]);
  for (size_t others = 1; others <= 3; ++others) {
    HttpDaemon d({"--rate-limit", "100000", "--context", "0", "--parallel", "4"}, Model());
    ASSERT_TRUE(d.process().ready()) << d.process().log();
    std::vector<std::thread> threads;
    for (size_t i = 0; i < others; ++i) {
      threads.emplace_back([&, i] { (void)Chat(d, kSystems[i % 2 == 0 ? 3 : 0], kQuestions[i % 3] + " Go on."); });
    }
    const Answer a = Chat(d, kSystems[3], kQuestions[1]);
    for (auto& t : threads) t.join();
    EXPECT_EQ(a.text, cold) << others << " others";
  }
}

// A regenerate: the same request sampled with a seed, once more after its greedy twin left
// the prompt and its last token's logits in the cache. Its text and log-probabilities are
// the cold daemon's to the bit: the kept logits are the ones the prompt's decode gave.
TEST_P(SameAnswer, ASeededRepeatGivesTheColdTextAndLogprobs) {
  const json body = {{"messages", {{{"role", "user"}, {"content", "Tell me about the sea."}}}},
                     {"max_tokens", 8},
                     {"temperature", 0.9},
                     {"seed", 7},
                     {"logprobs", true},
                     {"top_logprobs", 3}};
  auto send = [&](HttpDaemon& d) {
    HttpReply r = d.Unix("POST", "/v1/chat/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json();
  };
  HttpDaemon cold_daemon({"--rate-limit", "100000", "--context", "0"}, Model());
  ASSERT_TRUE(cold_daemon.process().ready()) << cold_daemon.process().log();
  const json cold = send(cold_daemon);
  HttpDaemon d({"--rate-limit", "100000", "--context", "0"}, Model());
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  (void)send(d);
  const json again = send(d);
  ASSERT_TRUE(cold.is_object() && again.is_object());
  EXPECT_EQ(again["choices"][0]["message"]["content"], cold["choices"][0]["message"]["content"]);
  EXPECT_EQ(again["choices"][0]["logprobs"], cold["choices"][0]["logprobs"]);
  const json& usage = again["usage"];
  if (GetParam() == "dense") EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"]);
}

// What `messages` get, greedy, the repeat penalty off: the text and its log-probabilities (the
// bits of the logits, which a kernel's order of sums changes long before a greedy token).
json Converse(HttpDaemon& d, const json& messages) {
  const json body = {{"messages", messages}, {"max_tokens", kTokens}, {"temperature", 0}, {"repeat_penalty", 1.0},
                     {"logprobs", true}, {"top_logprobs", 2}};
  HttpReply r = d.Unix("POST", "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  if (r.status != 200) return json();
  const json choice = json::parse(r.body)["choices"][0];
  return {choice["message"]["content"], choice["logprobs"]};
}

// Past the first tile of cells, a conversation's messages are short prompt calls at depth (a
// hybrid cuts a prompt at message starts 32 tokens or more apart): on the hybrid they take the
// tiled kernel from 6 rows by their rows and first position alone (FlashAttnRows), so a
// follow-up that reuses them, through a checkpoint of a prompt of another length, has the
// cold arithmetic. Every conversation on a daemon that served the ones before gives the text
// and log-probabilities of a daemon that served nothing.
TEST_P(SameAnswer, FollowUpsAfterALongSystemPromptGiveTheirColdAnswers) {
  std::string system;
  for (int i = 1; i <= 24; ++i) system += "Rule " + std::to_string(i) + ": answer the question about topic " + std::to_string(i) + " in plain words. ";
  auto msg = [](const char* role, const std::string& content) { return json{{"role", role}, {"content", content}}; };
  const std::string q1 = "I am planning a walk along the river next Sunday morning with two friends and a dog. "
                         "What should we bring, and how long should we plan for?";
  const std::string a1 = "Bring water, snacks, a leash, bags for the dog and light rain jackets. Plan for about two "
                         "hours, with a rest at the halfway bridge.";
  const std::string q2 = "Thanks. If it rains hard on the day, which indoor place near the river would you suggest "
                         "for the three of us and the dog?";
  const std::string a2 = "A dog-friendly cafe near the old mill would suit you: it has a covered terrace and "
                         "water bowls at the door.";
  json history = json::array({msg("system", system), msg("user", q1)});
  std::vector<json> conversations = {history};
  history.push_back(msg("assistant", a1));
  history.push_back(msg("user", q2));
  conversations.push_back(history);
  history.push_back(msg("assistant", a2));
  history.push_back(msg("user", "Why that one?"));
  conversations.push_back(history);
  HttpDaemon d({"--rate-limit", "100000", "--context", "0"}, Model());
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  for (size_t i = 0; i < conversations.size(); ++i) {
    const json warm = Converse(d, conversations[i]);
    HttpDaemon fresh({"--rate-limit", "100000", "--context", "0"}, Model());
    ASSERT_TRUE(fresh.process().ready()) << fresh.process().log();
    EXPECT_EQ(warm, Converse(fresh, conversations[i])) << "conversation " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SameAnswer, ::testing::Values("dense", "hybrid"),
                         [](const auto& info) { return info.param; });

// The same conversation through each API: the same prompt, so the same text. Each request
// asks for greedy decoding in its own API's words; the repeat penalty is the daemon's.
TEST(SameAnswerAcrossApis, EveryApiGivesTheSameTextForTheSameConversation) {
  const std::string kModel = "qwen35-tiny-q8_0";
  HttpDaemon d({"--rate-limit", "100000", "--context", "0", "--repeat-penalty", "1.0"}, Qwen35TinyPath());
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  const std::string& system = kSystems[2];
  const std::string& question = kQuestions[2];
  const std::string openai = Chat(d, system, question).text;
  ASSERT_FALSE(openai.empty());

  GenerateOptions o;
  o.system = system;
  o.max_tokens = kTokens;
  o.temperature = 0.0f;
  auto native = LlmClient(d.process().socket()).GenerateStream(question, o, nullptr);
  ASSERT_TRUE(native.has_value()) << native.error().ToString();
  EXPECT_EQ(native->text, openai) << "native";

  const json messages = {{{"role", "user"}, {"content", question}}};
  HttpReply anthropic = d.Unix("POST", "/v1/messages",
                               json{{"model", kModel}, {"system", system}, {"messages", messages}, {"max_tokens", kTokens},
                                    {"temperature", 0}}
                                   .dump());
  ASSERT_EQ(anthropic.status, 200) << anthropic.body;
  EXPECT_EQ(json::parse(anthropic.body)["content"][0]["text"].get<std::string>(), openai) << "anthropic";

  HttpReply responses = d.Unix("POST", "/v1/responses",
                               json{{"instructions", system}, {"input", question}, {"max_output_tokens", kTokens},
                                    {"temperature", 0}}
                                   .dump());
  ASSERT_EQ(responses.status, 200) << responses.body;
  EXPECT_EQ(json::parse(responses.body)["output"][0]["content"][0]["text"].get<std::string>(), openai) << "responses";

  const json ollama_messages = {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", question}}};
  HttpReply ollama = d.Unix("POST", "/api/chat",
                            json{{"model", kModel}, {"messages", ollama_messages}, {"stream", false},
                                 {"options", {{"temperature", 0}, {"num_predict", kTokens}}}}
                                .dump());
  ASSERT_EQ(ollama.status, 200) << ollama.body;
  EXPECT_EQ(json::parse(ollama.body)["message"]["content"].get<std::string>(), openai) << "ollama";
}

// Without a system message, no HTTP API puts one in: each gives the text the native socket gives
// with an empty system prompt. The daemon's `system_prompt` is the native socket's default only
// (docs/http.md); an HTTP client gets the prompt its messages make, as from llama-server.
TEST(SameAnswerAcrossApis, WithoutASystemMessageNoApiPutsOneIn) {
  const std::string kModel = "qwen35-tiny-q8_0";
  HttpDaemon d({"--rate-limit", "100000", "--context", "0", "--repeat-penalty", "1.0"}, Qwen35TinyPath());
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  const std::string& question = kQuestions[1];
  GenerateOptions o;
  o.system = "";
  o.max_tokens = kTokens;
  o.temperature = 0.0f;
  auto native = LlmClient(d.process().socket()).GenerateStream(question, o, nullptr);
  ASSERT_TRUE(native.has_value()) << native.error().ToString();
  ASSERT_FALSE(native->text.empty());

  const json messages = {{{"role", "user"}, {"content", question}}};
  auto text_of = [&](const std::string& path, const json& body, auto extract) {
    HttpReply r = d.Unix("POST", path, body.dump());
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return r.status == 200 ? extract(json::parse(r.body)) : std::string();
  };
  EXPECT_EQ(text_of("/v1/chat/completions", {{"messages", messages}, {"max_tokens", kTokens}, {"temperature", 0}},
                    [](const json& j) { return j["choices"][0]["message"]["content"].get<std::string>(); }),
            native->text)
      << "openai";
  EXPECT_EQ(text_of("/v1/messages", {{"model", kModel}, {"messages", messages}, {"max_tokens", kTokens}, {"temperature", 0}},
                    [](const json& j) { return j["content"][0]["text"].get<std::string>(); }),
            native->text)
      << "anthropic";
  EXPECT_EQ(text_of("/v1/responses", {{"input", question}, {"max_output_tokens", kTokens}, {"temperature", 0}},
                    [](const json& j) { return j["output"][0]["content"][0]["text"].get<std::string>(); }),
            native->text)
      << "responses";
  EXPECT_EQ(text_of("/api/chat",
                    {{"model", kModel},
                     {"messages", messages},
                     {"stream", false},
                     {"options", {{"temperature", 0}, {"num_predict", kTokens}}}},
                    [](const json& j) { return j["message"]["content"].get<std::string>(); }),
            native->text)
      << "ollama";
}

}  // namespace
}  // namespace llmd::testing
