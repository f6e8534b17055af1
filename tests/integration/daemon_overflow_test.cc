// Overflow drop_oldest through the real daemon over a small context: a native Chat session
// whose turns outgrow the context drops its oldest turn and says so in Done (also after the
// session went through a session file), and a Responses request with truncation:"auto" drops
// its oldest turn and says so in its usage; the default refuses both with the counts.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace llmd::testing
