// Overflow drop_oldest through the real daemon over a small context: a native Chat session
// whose turns outgrow the context drops its oldest turn and says so in Done (also after the
// session went through a session file), through the client library and llmctl too; a Responses
// request with truncation:"auto", chat/completions likewise, Anthropic Messages with
// X-Llmd-Overflow and Ollama's chat with truncate:true drop their oldest turn and say so in
// their usage; the default refuses them with the counts.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>
#include <string>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

using proto::Response;

constexpr int kContext = 256;

// About `words` tokens of plain text.
std::string Words(int words) {
  std::string out = "Please remember these words:";
  for (int i = 0; i < words; ++i) out += " water";
  return out;
}

proto::Request ChatTurn(const std::string& session, std::string message, std::optional<uint8_t> overflow) {
  proto::Request r;
  r.type = proto::Request::Type::kChat;
  r.session = session;
  r.prompt = std::move(message);
  r.max_tokens = 4;
  r.params.temperature = 0.0f;
  r.params.overflow = overflow;
  return r;
}

// The last frame of a turn (Done or Error), the Token frames skipped.
std::optional<Response> TurnEnd(RawConn& c, const proto::Request& turn) {
  if (!c.Send(turn)) return std::nullopt;
  while (auto r = c.Receive()) {
    if (r->type != Response::Type::kToken) return r;
  }
  return std::nullopt;
}

TEST(DaemonOverflow, ANativeChatDropsItsOldestTurnAndDoneSaysSo) {
  const std::string sessions = MakeTempDir();
  DaemonProcess d({"--context", std::to_string(kContext), "--session-dir", sessions});
  ASSERT_TRUE(d.ready()) << d.log();
  RawConn c(d.socket());
  ASSERT_TRUE(c.connected());
  auto first = TurnEnd(c, ChatTurn("s", Words(120), proto::kOverflowDropOldest));
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->type, Response::Type::kDone) << first->text;
  EXPECT_EQ(first->stats.dropped_turns, 0u);
  EXPECT_EQ(first->stats.dropped_tokens, 0u);

  // The default: the second long turn does not fit beside the first; refused with the counts.
  auto refused = TurnEnd(c, ChatTurn("s", Words(120), std::nullopt));
  ASSERT_TRUE(refused.has_value());
  ASSERT_EQ(refused->type, Response::Type::kError);
  EXPECT_EQ(refused->code, proto::ErrorCode::kContextOverflow);
  EXPECT_NE(refused->text.find("context of " + std::to_string(kContext)), std::string::npos) << refused->text;

  // Through a session file and back: the turn starts are kept with the tokens.
  LlmClient client(d.socket());
  ASSERT_FALSE(client.SaveSession("s").has_value());
  ASSERT_FALSE(client.EndSession("s").has_value());
  ASSERT_FALSE(client.RestoreSession("s").has_value());

  auto second = TurnEnd(c, ChatTurn("s", Words(120), proto::kOverflowDropOldest));
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->type, Response::Type::kDone) << second->text;
  EXPECT_EQ(second->stats.dropped_turns, 1u);
  EXPECT_GT(second->stats.dropped_tokens, 120u);  // the first turn's question at least
  EXPECT_LT(second->stats.prompt_tokens, static_cast<uint32_t>(kContext));
  // The session went on from the shorter history: a short turn now fits with nothing dropped.
  auto third = TurnEnd(c, ChatTurn("s", "Thanks.", proto::kOverflowDropOldest));
  ASSERT_TRUE(third.has_value());
  ASSERT_EQ(third->type, Response::Type::kDone) << third->text;
  EXPECT_EQ(third->stats.dropped_turns, 0u);
  EXPECT_GT(third->stats.cached_tokens, 0u);
  (void)!std::system(("rm -rf " + sessions).c_str());
}

std::string ResponsesBody(const std::string& truncation) {
  nlohmann::json input = nlohmann::json::array();
  input.push_back({{"role", "user"}, {"content", Words(120)}});
  input.push_back({{"role", "assistant"}, {"content", "I will remember."}});
  input.push_back({{"role", "user"}, {"content", Words(120)}});
  nlohmann::json body = {{"input", input}, {"max_output_tokens", 4}, {"temperature", 0}};
  if (!truncation.empty()) body["truncation"] = truncation;
  return body.dump();
}

TEST(DaemonOverflow, ResponsesTruncationAutoDropsTheOldestTurnAndTheUsageSaysSo) {
  HttpDaemon d({"--context", std::to_string(kContext)});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  HttpReply reply = d.Unix("POST", "/v1/responses", ResponsesBody("auto"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const nlohmann::json body = nlohmann::json::parse(reply.body);
  const nlohmann::json& usage = body["usage"];
  EXPECT_EQ(body["truncation"], "auto");
  EXPECT_EQ(usage["dropped_turns"], 1) << usage.dump();
  EXPECT_GT(usage["dropped_tokens"].get<int>(), 120) << usage.dump();
  EXPECT_LT(usage["input_tokens"].get<int>(), kContext);

  for (const std::string truncation : {"disabled", ""}) {
    HttpReply refused = d.Unix("POST", "/v1/responses", ResponsesBody(truncation));
    EXPECT_EQ(refused.status, 400) << refused.body;
    EXPECT_NE(refused.body.find("context_length_exceeded"), std::string::npos) << refused.body;
    EXPECT_NE(refused.body.find("context of " + std::to_string(kContext)), std::string::npos) << refused.body;
  }
  // No truncation field: X-Llmd-Overflow decides, and the Response says what it did.
  HttpReply by_header = d.Unix("POST", "/v1/responses", ResponsesBody(""), "-H 'X-Llmd-Overflow: drop_oldest'");
  ASSERT_EQ(by_header.status, 200) << by_header.body;
  const nlohmann::json header_body = nlohmann::json::parse(by_header.body);
  EXPECT_EQ(header_body["truncation"], "auto");
  EXPECT_EQ(header_body["usage"]["dropped_turns"], 1) << by_header.body;
  // What fits is untouched, and the usage has no drop fields.
  HttpReply small = d.Unix("POST", "/v1/responses",
                           R"({"input":"Hi","max_output_tokens":2,"truncation":"auto"})");
  ASSERT_EQ(small.status, 200) << small.body;
  const nlohmann::json small_body = nlohmann::json::parse(small.body);
  EXPECT_FALSE(small_body["usage"].contains("dropped_turns")) << small.body;
}

TEST(DaemonOverflow, ChatCompletionsTruncationAutoReportsTheDropsInUsage) {
  HttpDaemon d({"--context", std::to_string(kContext)});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  nlohmann::json messages = nlohmann::json::array();
  messages.push_back({{"role", "system"}, {"content", "Be brief."}});
  messages.push_back({{"role", "user"}, {"content", Words(120)}});
  messages.push_back({{"role", "assistant"}, {"content", "I will remember."}});
  messages.push_back({{"role", "user"}, {"content", Words(120)}});
  const nlohmann::json request = {{"messages", messages}, {"max_tokens", 4},
                                  {"temperature", 0}, {"truncation", "auto"}};
  HttpReply reply = d.Unix("POST", "/v1/chat/completions", request.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const nlohmann::json body = nlohmann::json::parse(reply.body);
  const nlohmann::json& usage = body["usage"];
  EXPECT_EQ(usage["dropped_turns"], 1) << usage.dump();
  EXPECT_GT(usage["dropped_tokens"].get<int>(), 120) << usage.dump();
}

// Three turns: a long question, a short answer, another long question: only fits without
// the first two.
nlohmann::json LongConversation() {
  nlohmann::json messages = nlohmann::json::array();
  messages.push_back({{"role", "user"}, {"content", Words(120)}});
  messages.push_back({{"role", "assistant"}, {"content", "I will remember."}});
  messages.push_back({{"role", "user"}, {"content", Words(120)}});
  return messages;
}

// The data of each SSE event in `body`.
std::vector<nlohmann::json> SseData(const std::string& body) {
  std::vector<nlohmann::json> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    out.push_back(nlohmann::json::parse(body.substr(at + 6, end - at - 6), nullptr, false));
    at = end;
  }
  return out;
}

TEST(DaemonOverflow, AnthropicWithTheHeaderAndOllamaWithTruncateReportTheDrops) {
  HttpDaemon d({"--context", std::to_string(kContext)});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  const std::string drop = "-H 'X-Llmd-Overflow: drop_oldest'";
  nlohmann::json messages = {{"model", "tiny-q8_0"}, {"max_tokens", 4}, {"temperature", 0},
                             {"messages", LongConversation()}};
  HttpReply reply = d.Unix("POST", "/v1/messages", messages.dump(), drop);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const nlohmann::json usage = nlohmann::json::parse(reply.body)["usage"];
  EXPECT_EQ(usage["dropped_turns"], 1) << usage.dump();
  EXPECT_GT(usage["dropped_tokens"].get<int>(), 120) << usage.dump();
  // Streamed: the final usage (message_delta) says it too.
  messages["stream"] = true;
  HttpReply streamed = d.Unix("POST", "/v1/messages", messages.dump(), drop);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  nlohmann::json delta_usage;
  for (const nlohmann::json& e : SseData(streamed.body)) {
    if (e.is_object() && e["type"] == "message_delta") delta_usage = e["usage"];
  }
  EXPECT_EQ(delta_usage["dropped_turns"], 1) << streamed.body;
  messages["stream"] = false;
  HttpReply refused = d.Unix("POST", "/v1/messages", messages.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("context of " + std::to_string(kContext)), std::string::npos) << refused.body;
  HttpReply bad = d.Unix("POST", "/v1/messages", messages.dump(), "-H 'X-Llmd-Overflow: sometimes'");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("header X-Llmd-Overflow must be error or drop_oldest (got 'sometimes')"), std::string::npos)
      << bad.body;

  nlohmann::json chat = {{"model", "tiny-q8_0"}, {"stream", false}, {"truncate", true},
                         {"options", {{"num_predict", 4}, {"temperature", 0}}}, {"messages", LongConversation()}};
  HttpReply ollama = d.Unix("POST", "/api/chat", chat.dump());
  ASSERT_EQ(ollama.status, 200) << ollama.body;
  const nlohmann::json final_object = nlohmann::json::parse(ollama.body);
  EXPECT_EQ(final_object["dropped_turns"], 1) << ollama.body;
  EXPECT_GT(final_object["dropped_tokens"].get<int>(), 120) << ollama.body;
  chat.erase("truncate");  // Ollama's own default would truncate; llmd's refuses
  HttpReply ollama_refused = d.Unix("POST", "/api/chat", chat.dump());
  EXPECT_EQ(ollama_refused.status, 400) << ollama_refused.body;
  EXPECT_NE(ollama_refused.body.find("context of " + std::to_string(kContext)), std::string::npos)
      << ollama_refused.body;
}

// The command's standard output and error together, and its exit code.
std::string RunCommand(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  *exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST(DaemonOverflow, TheClientLibraryAndLlmctlChatDropTheOldestTurn) {
  DaemonProcess d({"--context", std::to_string(kContext), "--max-new-tokens", "4"});
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient client(d.socket());
  GenerateOptions options;
  options.overflow = Overflow::kDropOldest;
  auto first = client.Chat("lib", Words(120), options, nullptr);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->dropped_turns, 0u);
  auto second = client.Chat("lib", Words(120), options, nullptr);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_EQ(second->dropped_turns, 1u);
  EXPECT_GT(second->dropped_tokens, 120u);
  auto refused = client.Chat("lib", Words(120), GenerateOptions{}, nullptr);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().server_code, static_cast<uint32_t>(proto::ErrorCode::kContextOverflow));

  const std::string ctl = std::string(LLMCTL_BINARY) + " --socket " + d.socket();
  int rc = -1;
  const std::string turns = "printf '%s\\n%s\\n' '" + Words(120) + "' '" + Words(120) + "' | ";
  const std::string out = RunCommand(turns + ctl + " chat --overflow drop_oldest", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dropped the oldest 1 turn ("), std::string::npos) << out;
  EXPECT_NE(RunCommand(ctl + " chat --help", &rc).find("--overflow"), std::string::npos);
  RunCommand(ctl + " chat --overflow sometimes", &rc);
  EXPECT_EQ(rc, 2) << "a usage error";
}

}  // namespace
}  // namespace llmd::testing
