// The OpenAI-compatible HTTP API against the real daemon, through the real curl binary, over
// the HTTP Unix socket and loopback TCP. Robustness items 23 and 28-36 through HTTP.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "llmd/client.h"
#include "tests/support/http_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

using nlohmann::json;

json Parse(const HttpReply& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.status << " " << r.body;
  return j;
}

std::string ChatBody(const std::string& user, int max_tokens, json extra = json::object()) {
  json b = {{"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
  b.update(extra);
  return b.dump();
}

// The SSE events of a streamed body, without the "data: " prefix.
std::vector<std::string> Events(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    size_t end = body.find("\n\n", at);
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

class HttpApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new HttpDaemon({"--max-new-tokens", "4096", "--rate-limit", "100000"}); }
  static void TearDownTestSuite() { delete daemon_; }
  static HttpDaemon& d() { return *daemon_; }
  static HttpDaemon* daemon_;
};
HttpDaemon* HttpApi::daemon_ = nullptr;

TEST_F(HttpApi, ChatCompletionMatchesTheNativeProtocolToken_for_token) {
  ASSERT_TRUE(d().process().ready());
  auto r = d().Unix("POST", "/v1/chat/completions", ChatBody("Tell me about rivers.", 24));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = Parse(r);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  EXPECT_TRUE(j["usage"]["prompt_tokens_details"].contains("cached_tokens"));

  // Same prompt (the user text, no system message: the daemon's `system_prompt` is the native
  // socket's default only), greedy, on the native socket.
  LlmClient native(d().process().socket());
  GenerateOptions o;
  o.max_tokens = 24;
  o.temperature = 0.0f;
  o.system = "";
  auto g = native.GenerateStream("Tell me about rivers.", o, nullptr);
  ASSERT_TRUE(g.has_value()) << g.error().ToString();
  EXPECT_EQ(j["choices"][0]["message"]["content"].get<std::string>(), g->text);
}

// presence_penalty and frequency_penalty change what is sampled (they were once accepted and
// ignored). Random weights never repeat a token by themselves, so negative penalties, which
// reward what was already said, make the difference visible: greedy then repeats itself.
TEST_F(HttpApi, PresenceAndFrequencyPenaltiesAreApplied) {
  auto body = [](double presence, double frequency) {
    return json{{"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}}, {"temperature", 0},
                {"max_tokens", 24}, {"presence_penalty", presence}, {"frequency_penalty", frequency}}
        .dump();
  };
  auto text = [&](double presence, double frequency) {
    auto r = d().Unix("POST", "/v1/chat/completions", body(presence, frequency));
    EXPECT_EQ(r.status, 200) << r.body;
    return Parse(r)["choices"][0]["message"]["content"].get<std::string>();
  };
  // The window holds the prompt's last tokens too (as in llama.cpp): a reward for repeats
  // soon makes the random model repeat the generation prompt's newline.
  const std::string plain = text(0, 0);
  const std::string frequency_only = text(0, -1);
  EXPECT_NE(frequency_only, plain) << "the frequency penalty is applied";
  EXPECT_NE(text(-2, -1), frequency_only) << "the presence penalty counts on its own";
  EXPECT_NE(text(2, -1), frequency_only) << "the presence penalty counts on its own";
  auto bad = d().Unix("POST", "/v1/chat/completions", body(2.5, 0));
  EXPECT_EQ(bad.status, 400) << "out of range is refused, not clamped";
}

TEST_F(HttpApi, StreamsSseChunksThatAddUpToTheAnswerAndShowsCachedTokens) {
  const std::string body = ChatBody("Name three colours.", 16, {{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  auto whole = Parse(d().Unix("POST", "/v1/chat/completions", ChatBody("Name three colours.", 16)));
  auto r = d().Unix("POST", "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("Content-Type: text/event-stream"), std::string::npos);
  auto events = Events(r.body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json e = json::parse(events[i]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (!e["usage"].is_null()) usage = e["usage"];
    if (e["choices"].empty()) continue;
    if (i == 0) {
      EXPECT_EQ(e["choices"][0]["delta"]["role"], "assistant");
    }
    if (e["choices"][0]["delta"].contains("content")) text += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"].get<std::string>());
  ASSERT_TRUE(usage.is_object()) << "include_usage sends a final usage chunk";
  EXPECT_EQ(usage["completion_tokens"], 16);
  // The same prompt a second time: its prefix comes from the KV cache.
  EXPECT_GT(usage["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST_F(HttpApi, CompletionsModelsHealthAndMetrics) {
  auto c = d().Unix("POST", "/v1/completions", R"({"prompt":"Once upon a time","temperature":0})");
  ASSERT_EQ(c.status, 200) << c.body;
  json j = Parse(c);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 16) << "OpenAI's default max_tokens";

  auto m = Parse(d().Unix("GET", "/v1/models"));
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "tiny-q8_0");

  auto h = d().Unix("GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, R"({"status":"ok"})") << "no detail beyond the state";

  LlmClient native(d().process().socket());
  ASSERT_TRUE(native.Generate("Hi", 2).has_value());
  auto metrics = d().Unix("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  for (const char* family : {"llmd_requests_total{api=\"openai\",outcome=\"ok\"}",
                             "llmd_requests_total{api=\"native\",outcome=\"ok\"}", "llmd_time_to_first_token_seconds_bucket",
                             "llmd_inter_token_latency_seconds_count", "llmd_prompt_tokens_total{model=\"tiny-q8_0\"}",
                             "llmd_cached_prompt_tokens_total", "llmd_generated_tokens_total",
                             "llmd_draft_tokens_total{model=\"tiny-q8_0\"} 0",
                             "llmd_accepted_draft_tokens_total{model=\"tiny-q8_0\"} 0", "llmd_queue_depth",
                             "llmd_active_sequences", "llmd_kv_cache_usage_ratio",
                             "llmd_model_device_layers{model=\"tiny-q8_0\",device=\"CPU\"} 3",
                             "llmd_model_device_memory_bytes{model=\"tiny-q8_0\",device=\"CPU\",kind=\"weights\"} 2",
                             // Nothing parked or pinned on this daemon: the families are there, at 0.
                             "llmd_parked_sequences{model=\"tiny-q8_0\"} 0", "llmd_parked_bytes{model=\"tiny-q8_0\"} 0",
                             "llmd_parks_total{model=\"tiny-q8_0\"} 0", "llmd_recomputes_total{model=\"tiny-q8_0\"} 0",
                             "llmd_pinned_prefixes{model=\"tiny-q8_0\"} 0", "llmd_pinned_hits_total{model=\"tiny-q8_0\"} 0"}) {
    EXPECT_NE(metrics.body.find(family), std::string::npos) << family;
  }
}

TEST_F(HttpApi, ErrorsAreOpenAiJsonWithTheRightStatus) {
  struct Case {
    const char* method;
    const char* path;
    std::string body;
    int status;
    const char* type;
  } cases[] = {
      {"POST", "/v1/chat/completions", "{not json", 400, "invalid_request_error"},
      {"POST", "/v1/chat/completions", R"({"messages":"hi"})", 400, "invalid_request_error"},
      {"POST", "/v1/chat/completions", ChatBody("x", 4, {{"max_tokens", "ten"}}), 400, "invalid_request_error"},
      {"POST", "/v1/chat/completions", ChatBody("x", 4, {{"model", "no-such-model"}}), 404, "invalid_request_error"},
      {"GET", "/v1/chat/completions", "", 405, "invalid_request_error"},
      {"GET", "/v1/nothing", "", 404, "invalid_request_error"},
      {"POST", "/v1/completions", std::string(2 << 20, ' '), 413, "invalid_request_error"},
  };
  for (const auto& c : cases) {
    auto r = d().Unix(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body.substr(0, 80) << " -> " << r.body;
    json j = Parse(r);
    EXPECT_EQ(j["error"]["type"], c.type) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
  }
  EXPECT_TRUE(d().process().Running());
}

TEST_F(HttpApi, Item23_TcpNeedsTheKeyAnAllowedHostAndNoForeignOrigin) {
  ASSERT_GT(d().port(), 0);
  EXPECT_EQ(d().Tcp("GET", "/v1/models").status, 200);
  EXPECT_EQ(d().Tcp("GET", "/v1/models", "", "").status, 401) << "no key";
  EXPECT_EQ(d().Tcp("GET", "/v1/models", "", "-H 'Authorization: Bearer wrong-key-0123456789abc'").status, 401);
  EXPECT_EQ(d().Tcp("GET", "/v1/models", "", "-H 'Authorization: Bearer test-key-0123456789abcdeX'").status, 401);
  const std::string key = "-H 'Authorization: Bearer " + std::string(HttpDaemon::kApiKey) + "' ";
  EXPECT_EQ(d().Tcp("GET", "/v1/models", "", key + "-H 'Host: evil.example'").status, 403) << "DNS rebinding";
  auto origin = d().Tcp("POST", "/v1/chat/completions", ChatBody("x", 2), key + "-H 'Origin: http://evil.example'");
  EXPECT_EQ(origin.status, 403);
  EXPECT_EQ(origin.headers.find("Access-Control-Allow-Origin"), std::string::npos) << "never CORS";
  auto health = d().Tcp("GET", "/health", "", "");
  EXPECT_EQ(health.status, 200) << "health needs no key";
  EXPECT_EQ(health.body, R"({"status":"ok"})");
  auto chat = d().Tcp("POST", "/v1/chat/completions", ChatBody("Hi", 3));
  EXPECT_EQ(chat.status, 200) << chat.body;
}

TEST_F(HttpApi, OtherUsersAreRefusedOnTheHttpSocket) {
  const std::string sock = d().http_socket();
  int rc = RunAsNobody([&] {
    // Connect succeeds only if the socket mode allowed it; then the daemon must close at once.
    RawConn c(sock);
    if (!c.connected()) return 0;
    c.Write("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n");
    pollfd p{c.fd(), POLLIN, 0};
    if (::poll(&p, 1, kLivenessMillis) != 1) return 2;  // neither closed nor answered: a hang
    char buf[16];
    return ::recv(c.fd(), buf, sizeof buf, 0) <= 0 ? 0 : 1;
  });
  EXPECT_EQ(rc, 0) << "a peer outside the allowlist gets no HTTP answer";
}

TEST_F(HttpApi, ADisconnectMidStreamCancelsTheGeneration) {
  RawConn c(d().http_socket());
  ASSERT_TRUE(c.connected());
  std::string body = ChatBody("Write a very long story.", 4000, {{"stream", true}});
  c.Write("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body);
  pollfd p{c.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, kLivenessMillis), 1);  // liveness only
  char buf[512];
  ASSERT_GT(::recv(c.fd(), buf, sizeof buf, 0), 0);  // the stream has started
  c.Close();
  std::string metrics;
  WaitFor([&] {
    metrics = d().Unix("GET", "/metrics").body;
    return metrics.find("outcome=\"client_gone\"") != std::string::npos &&
           metrics.find("llmd_active_sequences{model=\"tiny-q8_0\"} 0") != std::string::npos;
  });
  EXPECT_NE(metrics.find("outcome=\"client_gone\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("llmd_active_sequences{model=\"tiny-q8_0\"} 0"), std::string::npos) << metrics;
}

TEST_F(HttpApi, Items28To31_BadTextGetsAClearErrorOrADefinedAnswer) {
  // 28: invalid UTF-8 in the body, and an escaped lone surrogate: the JSON is refused.
  for (const std::string& bad : {std::string("\xC0\xAF"), std::string("\x80"), std::string("\xED\xA0\x80"), std::string("ab\xE2\x82")}) {
    auto r = d().Unix("POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":")" + bad + R"("}]})");
    EXPECT_EQ(r.status, 400) << r.body;
  }
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", R"({"messages":[{"role":"user","content":"\ud800"}]})").status, 400);
  // 28/29: NUL, ANSI escapes, bidi overrides and zero-width characters: sanitized, answered.
  for (const char* text : {"a\\u0000b", "\\u001b[31mred\\u001b[0m", "\\u202eevil\\u202c", "zero\\u200bwidth", "line\\u2028sep"}) {
    auto r = d().Unix("POST", "/v1/chat/completions", std::string(R"({"max_tokens":2,"messages":[{"role":"user","content":")") + text + R"("}]})");
    EXPECT_EQ(r.status, 200) << text << " " << r.body;
  }
  // 30: special-token text is plain text: "<|im_end|>" costs several tokens, not one.
  auto prompt_tokens = [&](const std::string& user) {
    return Parse(d().Unix("POST", "/v1/chat/completions", ChatBody(user, 1)))["usage"]["prompt_tokens"].get<int>();
  };
  EXPECT_GE(prompt_tokens("<|im_end|>") - prompt_tokens(""), 3);
  EXPECT_GE(prompt_tokens("<|im_start|>system") - prompt_tokens(""), 4);
  // 31: an empty user message is a defined (templated) prompt; an empty raw prompt is an error.
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody("", 2)).status, 200);
  EXPECT_EQ(d().Unix("POST", "/v1/completions", R"({"prompt":""})").status, 400);
}

TEST_F(HttpApi, Items32To35_LimitsAndParametersAreCheckedNotForwarded) {
  // 32/33: longer than the context, and 64 KiB of 4-byte characters.
  std::string longer;
  for (int i = 0; i < 1200; ++i) longer += "word ";
  auto r = d().Unix("POST", "/v1/chat/completions", ChatBody(longer, 4));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(Parse(r)["error"]["code"], "context_length_exceeded");
  std::string emoji;
  for (int i = 0; i < 16384; ++i) emoji += "\xF0\x9F\x98\x80";
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody(emoji, 4)).status, 400);
  // 34: 0 is an empty answer; negative is an error; huge is clamped.
  auto zero = Parse(d().Unix("POST", "/v1/chat/completions", ChatBody("Hi", 0)));
  EXPECT_EQ(zero["choices"][0]["message"]["content"], "");
  EXPECT_EQ(zero["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody("Hi", -1)).status, 400);
  auto huge = d().Unix("POST", "/v1/completions", R"({"prompt":"Hi","max_tokens":4294967295,"temperature":0})");
  EXPECT_EQ(huge.status, 200) << huge.body;
  EXPECT_LE(Parse(huge)["usage"]["completion_tokens"].get<int>(), 1024);
  // 35: out-of-range sampling values are refused; seed extremes are fine.
  for (const char* extra : {R"("temperature":-1)", R"("temperature":1e309)", R"("temperature":NaN)", R"("top_p":1.5)",
                            R"("top_k":-1)", R"("top_k":0)", R"("repeat_penalty":0.5)"}) {
    auto bad = d().Unix("POST", "/v1/chat/completions",
                        std::string(R"({"messages":[{"role":"user","content":"x"}],)") + extra + "}");
    EXPECT_EQ(bad.status, 400) << extra << " " << bad.body;
  }
  for (const char* seed : {"0", "-1", "18446744073709551615", "-9223372036854775808"}) {
    auto ok = d().Unix("POST", "/v1/chat/completions",
                       std::string(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}],"seed":)") + seed + "}");
    EXPECT_EQ(ok.status, 200) << seed << " " << ok.body;
  }
  EXPECT_TRUE(d().process().Running());
}

TEST_F(HttpApi, Item36_StopSequences) {
  // The first piece of a greedy answer, then the same request stopped at it.
  auto first = Events(d().Unix("POST", "/v1/chat/completions", ChatBody("Count.", 8, {{"stream", true}})).body);
  ASSERT_GE(first.size(), 3u);
  std::string piece = json::parse(first[1])["choices"][0]["delta"]["content"];
  ASSERT_FALSE(piece.empty());
  auto stopped = Parse(d().Unix("POST", "/v1/chat/completions", ChatBody("Count.", 8, {{"stop", piece}})));
  EXPECT_EQ(stopped["choices"][0]["message"]["content"], "");
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  // An empty stop string is ignored; too long or too many are refused.
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody("Count.", 2, {{"stop", ""}})).status, 200);
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody("Count.", 2, {{"stop", std::string(10240, 'a')}})).status, 400);
  EXPECT_EQ(d().Unix("POST", "/v1/chat/completions", ChatBody("Count.", 2, {{"stop", std::vector<std::string>(10000, "a")}})).status, 400);
}

TEST(HttpApiLimits, RateLimitedBusyAndDeadline) {
  HttpDaemon d({"--rate-limit", "1", "--request-timeout-ms", "30", "--parallel", "1", "--max-new-tokens", "4096"});
  ASSERT_TRUE(d.process().ready());
  // Two at once from one uid, with a budget of one per second: the second is 429.
  auto first = d.Unix("POST", "/v1/chat/completions", ChatBody("Write a very long story.", 4000));
  EXPECT_EQ(first.status, 504) << "the 30 ms deadline passes: " << first.body;
  EXPECT_EQ(Parse(first)["error"]["code"], "timeout");
  auto second = d.Unix("GET", "/v1/models");
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_NE(second.headers.find("Retry-After: 1"), std::string::npos);
}

// 26: with less memory available than the floor (here a floor no machine reaches), new work is
// refused with "insufficient memory" on both APIs, and the daemon stays up and healthy.
TEST(HttpApiLimits, Item26_LowMemoryRefusesNewWorkClearly) {
  HttpDaemon d({"--memory-floor-mb", "100000000", "--rate-limit", "100000"});
  ASSERT_TRUE(d.process().ready());
  auto http = d.Unix("POST", "/v1/chat/completions", ChatBody("Hi", 4));
  EXPECT_EQ(http.status, 503) << http.body;
  EXPECT_NE(Parse(http)["error"]["message"].get<std::string>().find("insufficient memory"), std::string::npos) << http.body;
  LlmClient native(d.process().socket());
  auto g = native.Generate("Hi", 4);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message.find("insufficient memory"), std::string::npos) << g.error().ToString();
  EXPECT_TRUE(native.HealthCheck().has_value()) << "health is not new work";
  EXPECT_EQ(d.Unix("GET", "/health").status, 200);
  EXPECT_TRUE(d.process().Running());
}

TEST(HttpApiLimits, BusyWhenTheQueueIsFull) {
  // No spare sequences: the second request waits in the queue (with them it would take one to
  // compute its prompt ahead).
  HttpDaemon d({"--parallel", "1", "--reserved-sequences", "0", "--queue-depth", "1", "--max-new-tokens", "4096",
                "--rate-limit", "100000"});
  ASSERT_TRUE(d.process().ready());
  // ignore_eos: each request runs its 4,000 tokens, so the queue stays full while the test looks.
  const std::string body = ChatBody("Write a very long story.", 4000, {{"temperature", 1}, {"ignore_eos", true}});
  // One request runs in the only slot; once /metrics shows it generating, a second waits in the
  // queue of one; once it shows that, a third is refused, whatever the machine's speed.
  std::vector<int> statuses(2);
  std::vector<std::thread> load;
  auto metrics_show = [&](const std::string& line) {
    return WaitFor([&] { return d.Unix("GET", "/metrics").body.find(line) != std::string::npos; });
  };
  load.emplace_back([&] { statuses[0] = d.Unix("POST", "/v1/chat/completions", body).status; });
  const bool running = metrics_show("llmd_active_sequences{model=\"tiny-q8_0\"} 1\n");
  EXPECT_TRUE(running) << "the first request never started";
  load.emplace_back([&] { statuses[1] = d.Unix("POST", "/v1/chat/completions", body).status; });
  const bool queued = running && metrics_show("llmd_queue_depth{model=\"tiny-q8_0\"} 1\n");
  EXPECT_TRUE(queued) << "the second request never waited in the queue";
  const auto third = d.Unix("POST", "/v1/chat/completions", body);
  for (auto& t : load) t.join();
  if (queued) {
    EXPECT_EQ(third.status, 503) << third.body;
    EXPECT_NE(third.body.find("\"server_busy\""), std::string::npos) << third.body;
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 200})) << "the running and the queued request are both served";
}

// One GET /health over the Unix socket at `sock`, in-process (no curl to start, so the first
// request goes out as soon as the socket is there); the status, or 0 when none came.
int HealthStatus(const std::string& sock) {
  RawConn c(sock);
  if (!c.connected() || !c.Write("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")) return 0;
  std::string got;
  char buf[1024];
  pollfd p{c.fd(), POLLIN, 0};
  while (got.find("\r\n") == std::string::npos && ::poll(&p, 1, kLivenessMillis) == 1) {
    const ssize_t n = ::recv(c.fd(), buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got.starts_with("HTTP/1.1 ") && got.size() >= 12 ? std::atoi(got.substr(9, 3).c_str()) : 0;
}

TEST(HttpApiLimits, HealthSays503WhileTheModelLoads) {
  const std::string dir = MakeTempDir();
  const std::string sock = dir + "/api.sock";
  std::vector<int> seen;
  std::atomic<bool> done{false}, saw_ready{false};
  std::thread poll([&] {
    while (!done.load()) {
      int s = HealthStatus(sock);
      if (s != 0 && (seen.empty() || seen.back() != s)) seen.push_back(s);
      if (s == 200) {
        saw_ready = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // pacing only
    }
  });
  {
    DaemonProcess d({"--http-socket", sock});
    // No ASSERT while the poller runs: an early return would destroy it unjoined.
    EXPECT_TRUE(d.ready()) << d.log();
    // The daemon is ready; the poller stops by itself once its health check says so.
    if (d.ready()) {
      EXPECT_TRUE(WaitFor([&] { return saw_ready.load(); })) << "health never said 200";
    }
    done = true;
    poll.join();
  }
  (void)!std::system(("rm -rf " + dir).c_str());
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), 503) << "loading first";
  EXPECT_EQ(seen.back(), 200) << "then ready";
}

}  // namespace
}  // namespace llmd::testing

namespace llmd::testing {
namespace {

// One keep-alive HTTP connection over a Unix socket; responses read by Content-Length.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(const std::string& path) : conn_(path) {}
  // Returns the status, or 0 when the connection broke.
  int Post(const std::string& target, const std::string& body) {
    if (!conn_.Write("POST " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body)) {
      return 0;
    }
    while (true) {
      size_t head = buf_.find("\r\n\r\n");
      if (head != std::string::npos) {
        const size_t at = buf_.find("Content-Length: ");
        if (at == std::string::npos || at > head) return 0;
        const size_t length = std::stoul(buf_.substr(at + 16));
        if (buf_.size() >= head + 4 + length) {
          const int status = std::stoi(buf_.substr(9, 3));
          buf_.erase(0, head + 4 + length);
          return status;
        }
      }
      pollfd p{conn_.fd(), POLLIN, 0};
      if (::poll(&p, 1, kLivenessMillis) <= 0) return 0;  // liveness only
      char chunk[8192];
      ssize_t n = ::recv(conn_.fd(), chunk, sizeof chunk, 0);
      if (n <= 0) return 0;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  RawConn conn_;
  std::string buf_;
};

TEST(HttpApiLimits, Item27_UniqueParameterChurnDoesNotGrowMemory) {
  HttpDaemon d({"--rate-limit", "1000000"});
  ASSERT_TRUE(d.process().ready());
  KeepAliveClient client(d.http_socket());
  auto request = [](int i) {
    json b = {{"messages", {{{"role", "user"}, {"content", "Question " + std::to_string(i)}}}},
              {"max_tokens", 1},
              {"temperature", 0.01 + (i % 1000) / 1000.0},
              {"top_p", 0.5 + (i % 500) / 1000.0},
              {"top_k", 1 + i},
              {"repeat_penalty", 1.0 + (i % 100) / 100.0},
              {"seed", i},
              {"stop", {"stop-" + std::to_string(i), std::string(200, 'a' + i % 26) + std::to_string(i)}}};
    return b.dump();
  };
  for (int i = 0; i < 300; ++i) ASSERT_EQ(client.Post("/v1/chat/completions", request(i)), 200) << i;
  // Taken while the last request's event descriptor may still be open: the count below
  // then allows one more, and a leak of one per request still shows by the thousand.
  const long rss_warm = d.process().RssKb();
  const int fds_warm = d.process().FdCount();
  const int churn = UnderSanitizer() ? 300 : 2000;  // under ASan: the code paths, not the memory
  for (int i = 300; i < 300 + churn; ++i) ASSERT_EQ(client.Post("/v1/chat/completions", request(i)), 200) << i;
  const long growth_kb = d.process().RssKb() - rss_warm;
  std::printf("RSS after 300 requests %ld KiB, growth over the next %d: %ld KiB\n", rss_warm, churn, growth_kb);
  if (!UnderSanitizer()) {
    EXPECT_LT(growth_kb, 16 * 1024) << churn << " distinct parameter sets, no cache growth";
  }
  // The last request's event descriptor may still be closing on the engine thread.
  EXPECT_TRUE(WaitFor([&] { return d.process().FdCount() <= fds_warm; }))
      << d.process().FdCount() << " descriptors open, " << fds_warm << " after the first 300";
}

}  // namespace
}  // namespace llmd::testing

namespace llmd::testing {
namespace {

// The guard cascade over HTTP, with a synthetic guard held by its grammar to one verdict.
TEST(HttpApiGuard, AnUnsafeVerdictIsAContentFilterFinishAndShowsNothing) {
  auto args = ForcedGuardArgs("Safety: Unsafe\\nCategories: Violent");
  args.insert(args.end(), {"--rate-limit", "100000"});
  HttpDaemon d(args);
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  auto whole = Parse(d.Unix("POST", "/v1/chat/completions", ChatBody("Tell me a story.", 8)));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "content_filter");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], "");
  auto streamed = d.Unix("POST", "/v1/chat/completions", ChatBody("Tell me a story.", 8, {{"stream", true}}));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::string text, finish;
  for (const auto& e : Events(streamed.body)) {
    if (e == "[DONE]") continue;
    json j = json::parse(e);
    if (j["choices"].empty()) continue;
    if (j["choices"][0]["delta"].contains("content")) text += j["choices"][0]["delta"]["content"].get<std::string>();
    if (!j["choices"][0]["finish_reason"].is_null()) finish = j["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, "") << "nothing of the draft is ever streamed";
  EXPECT_EQ(finish, "content_filter");
  EXPECT_EQ(d.process().CountLog("guard_verdict api=openai"), 2u);
}

TEST(HttpApiGuard, ASafeVerdictShowsTheAnswer) {
  auto args = ForcedGuardArgs("Safety: Safe");
  args.insert(args.end(), {"--rate-limit", "100000"});
  HttpDaemon d(args);
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  auto whole = Parse(d.Unix("POST", "/v1/chat/completions", ChatBody("Tell me a story.", 8)));
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  const std::string answer = whole["choices"][0]["message"]["content"];
  EXPECT_FALSE(answer.empty());
  auto streamed = Events(d.Unix("POST", "/v1/chat/completions", ChatBody("Tell me a story.", 8, {{"stream", true}})).body);
  std::string text;
  for (const auto& e : streamed) {
    if (e == "[DONE]") continue;
    json j = json::parse(e);
    if (!j["choices"].empty() && j["choices"][0]["delta"].contains("content")) {
      text += j["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, answer) << "the same greedy answer, sent whole after the verdict";
}

}  // namespace
}  // namespace llmd::testing
