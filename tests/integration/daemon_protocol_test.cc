// The real llmd over its socket: the seed protocol, streaming, and robustness-tests.md items
// 1-12 and 40-41. Every test also checks the daemon keeps serving afterwards.
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "llmd/client.h"
#include "tests/support/concurrent_streams.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

using proto::Constraint;
using proto::ErrorCode;
using proto::Response;

// A stream's text and its last frame (Done or Error), read off one connection.
struct StreamReply {
  std::string text;
  std::optional<Response> last;
};
StreamReply ReadStream(RawConn& c) {
  StreamReply out;
  while (auto r = c.Receive(120000)) {  // liveness only
    if (r->type != Response::Type::kToken) {
      out.last = std::move(r);
      break;
    }
    out.text += r->text;
  }
  return out;
}

proto::Request Constrained(std::string prompt, Constraint::Kind kind, std::string text, uint32_t max_tokens = 64) {
  proto::Request r = GenerateRequest(std::move(prompt), max_tokens, /*stream=*/true);
  r.params.constraint = Constraint{kind, std::move(text)};
  return r;
}

class DaemonProtocolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Replies capped at 64 tokens: enough for every check here, and quick on a loaded CI machine.
    daemon_ = new DaemonProcess({"--temperature", "0", "--frame-timeout-ms", "1000", "--idle-timeout-ms", "1500",
                                 "--write-timeout-ms", "1000", "--admission-wait-ms", "3000", "--rate-limit", "100000",
                                 "--max-new-tokens", "64"});
    ASSERT_TRUE(daemon_->ready()) << daemon_->log();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  // The daemon still answers a normal request correctly.
  static void ExpectServing() {
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.Send(HealthRequest()));
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value()) << "daemon stopped answering";
    EXPECT_EQ(r->type, Response::Type::kHealth);
    EXPECT_TRUE(r->model_loaded);
  }
  static DaemonProcess* daemon_;
};
DaemonProcess* DaemonProtocolTest::daemon_ = nullptr;

TEST_F(DaemonProtocolTest, SeedGenerateAndHealthWork) {
  LlmClient client(daemon_->socket());
  auto g = client.Generate("Say hello.", 8);
  ASSERT_TRUE(g.has_value()) << g.error().ToString();
  EXPECT_LE(g->tokens_generated, 8u);
  EXPECT_GT(g->tokens_generated, 0u);
  auto again = client.Generate("Say hello.", 8);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->text, g->text) << "greedy: the same reply";
  auto h = client.HealthCheck();
  ASSERT_TRUE(h.has_value());
  EXPECT_TRUE(h->model_loaded);
  EXPECT_EQ(h->npu_core, 0);
  EXPECT_GE(h->kv_cache_usage, 0.0f);
  EXPECT_LE(h->kv_cache_usage, 1.0f);
}

TEST_F(DaemonProtocolTest, StreamSendsTokensThenDoneWithStats) {
  LlmClient client(daemon_->socket());
  std::string streamed;
  GenerateOptions o;
  o.max_tokens = 12;
  o.temperature = 0.0f;
  auto g = client.GenerateStream("Tell me a story.", o, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(g.has_value()) << g.error().ToString();
  EXPECT_EQ(streamed, g->text);
  EXPECT_GT(g->prompt_tokens, 10u);
  EXPECT_GT(g->ttft_ms, 0.0f);
  EXPECT_TRUE(g->finish_reason == "length" || g->finish_reason == "stop");
  auto cached = client.GenerateStream("Tell me a story.", o, nullptr);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->cached_tokens, cached->prompt_tokens) << "the repeated prompt is reused whole";
  EXPECT_EQ(cached->text, g->text);
}

TEST_F(DaemonProtocolTest, InvalidPromptsGetTheSeedCodes) {
  LlmClient client(daemon_->socket());
  auto empty = client.Generate("   ", 4);
  ASSERT_FALSE(empty.has_value());
  EXPECT_EQ(empty.error().kind, ClientError::Kind::kServerError);
  EXPECT_EQ(empty.error().server_code, static_cast<uint32_t>(ErrorCode::kInvalidPrompt));
  std::string huge;
  for (int i = 0; i < 1500; ++i) huge += " word";
  auto too_long = client.Generate(huge, 4);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().server_code, static_cast<uint32_t>(ErrorCode::kInvalidPrompt));
  EXPECT_NE(too_long.error().message.find("prompt too long"), std::string::npos);
  auto zero = client.Generate("hi", 0);
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().server_code, static_cast<uint32_t>(ErrorCode::kInvalidPrompt));
  auto ok = client.Generate("hi", UINT32_MAX);  // clamped to max_new_tokens
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_LE(ok->tokens_generated, 64u);
}

TEST_F(DaemonProtocolTest, Item01_EmptyFrameIsAnErrorThenClose) {
  RawConn c(daemon_->socket());
  ASSERT_TRUE(c.Write(std::string("\0\0\0\0", 4)));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, ErrorCode::kInvalidPrompt);
  EXPECT_EQ(r->text, "empty frame");
  EXPECT_TRUE(c.ClosedByPeer());
  ExpectServing();
}

TEST_F(DaemonProtocolTest, Items02_03_OversizedLengthsAreRefusedBeforeAllocating) {
  const long rss_before = daemon_->RssKb();
  for (std::string header : {std::string("\0\x01\0\x01", 4), std::string("\xff\xff\xff\xff", 4),
                             std::string("\x80\0\0\0", 4)}) {
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.Write(header));
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value());
    EXPECT_NE(r->text.find("exceeds the 65536-byte limit"), std::string::npos);
    EXPECT_TRUE(c.ClosedByPeer());
  }
  EXPECT_LT(daemon_->RssKb() - rss_before, 4096) << "nothing large was allocated";
  ExpectServing();
}

// A daemon of its own: the suite's 1 s frame deadline would make the test a race between the
// deadline and how fast the machine hands over the bytes. Here the deadlines are liveness
// bounds, and each byte is written once the daemon has read the one before (nothing of ours
// is left unread in the socket), so every read the daemon makes gets one byte.
TEST(DaemonProtocolSlowPeer, Item04_OneBytePerWrite) {
  DaemonProcess d({"--frame-timeout-ms", std::to_string(kLivenessMillis), "--idle-timeout-ms",
                   std::to_string(kLivenessMillis), "--rate-limit", "100000"});
  ASSERT_TRUE(d.ready()) << d.log();
  RawConn c(d.socket());
  ASSERT_TRUE(c.connected());
  auto unread = [&] {
    int n = -1;
    return ::ioctl(c.fd(), SIOCOUTQ, &n) == 0 ? n : -1;
  };
  ASSERT_EQ(unread(), 0) << "SIOCOUTQ on a Unix socket";
  std::string wire = proto::EncodeFrame(proto::EncodeRequest(GenerateRequest("Hi", 3)));
  for (char ch : wire) {
    ASSERT_TRUE(c.Write(std::string(1, ch)));
    ASSERT_TRUE(WaitFor([&] { return unread() == 0; }, kLiveness,
                        [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }))
        << "the daemon stopped reading";
  }
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, Response::Type::kGenerated);
}

TEST_F(DaemonProtocolTest, Item05_TruncatedFrameRunsNothing) {
  {
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.Write(std::string("\0\0\x03\xe8", 4) + "0123456789"));
  }  // closed mid-frame
  ASSERT_TRUE(daemon_->WaitForLog("reason=truncated_frame"));
  ExpectServing();
}

TEST_F(DaemonProtocolTest, Item06_SlowlorisHitsTheFrameDeadline) {
  const size_t before = daemon_->CountLog("reason=frame_timeout");
  RawConn c(daemon_->socket());
  ASSERT_TRUE(c.Write(std::string("\0\0\0\x20", 4)));
  bool closed = false;
  // A byte every 300 ms keeps the idle deadline away; only the frame deadline can close it.
  for (int i = 0; i < 200 && !closed; ++i) {
    c.Write("x");
    pollfd p{c.fd(), POLLIN, 0};
    closed = ::poll(&p, 1, 300) > 0;
  }
  EXPECT_TRUE(closed);
  EXPECT_TRUE(daemon_->WaitForLog("reason=frame_timeout"));
  EXPECT_EQ(daemon_->CountLog("reason=frame_timeout"), before + 1) << "closed by the frame deadline";
  ExpectServing();
}

TEST_F(DaemonProtocolTest, Item07_IdleConnectionsCannotLockOthersOut) {
  // Four peers take every slot (the cap is 4), then go idle. Each first asks for the model
  // list: a connection still waiting for a slot is answered health checks only, so the answer
  // says the peer holds a slot.
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawConn>(daemon_->socket()));
    proto::Request models;
    models.type = proto::Request::Type::kModels;
    ASSERT_TRUE(idle.back()->Send(models));
    auto r = idle.back()->Receive(60000);  // liveness only
    ASSERT_TRUE(r.has_value() && r->type == Response::Type::kModels) << "idle peer " << i << " got no slot";
  }
  RawConn fifth(daemon_->socket());
  ASSERT_TRUE(fifth.Send(HealthRequest()));
  auto r = fifth.Receive(60000);  // liveness only
  ASSERT_TRUE(r.has_value()) << "a bounded wait, never a lockout";
  EXPECT_EQ(r->type, Response::Type::kHealth) << "served once an idle peer timed out";
  for (auto& c : idle) EXPECT_TRUE(c->ClosedByPeer(30000)) << "idle timeout";  // liveness only
}

TEST_F(DaemonProtocolTest, Items08_09_GarbageAndInconsistentPayloads) {
  std::mt19937 rng(7);
  RawConn c(daemon_->socket());
  for (int i = 0; i < 300; ++i) {
    std::string payload(1 + rng() % 40, '\0');
    for (auto& ch : payload) ch = static_cast<char>(rng());
    // Mostly known variants with broken fields; never a well-formed Shutdown (we are root).
    static constexpr char kVariants[] = {0, 1, 3, 4, 7};
    payload[0] = kVariants[rng() % 5];
    ASSERT_TRUE(c.Write(proto::EncodeFrame(payload)));
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value()) << "no answer to garbage #" << i;
  }
  RawConn inconsistent(daemon_->socket());
  ASSERT_TRUE(inconsistent.Write(proto::EncodeFrame(std::string("\x00\xff\xff\xff\xff\x0fHi", 8))));
  auto r = inconsistent.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, ErrorCode::kInvalidPrompt);
  EXPECT_NE(r->text.find("exceeds"), std::string::npos);
  ExpectServing();
}

TEST_F(DaemonProtocolTest, Item10_UnknownVariantKeepsTheConnectionUsable) {
  RawConn c(daemon_->socket());
  ASSERT_TRUE(c.Write(proto::EncodeFrame("\x2a")));
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, ErrorCode::kUnsupported);
  EXPECT_NE(r->text.find("unsupported request variant 42"), std::string::npos);
  ASSERT_TRUE(c.Send(HealthRequest()));
  auto h = c.Receive();
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->type, Response::Type::kHealth);
}

TEST_F(DaemonProtocolTest, Item11_PipelinedFramesAndTrailingJunk) {
  RawConn c(daemon_->socket());
  std::string two = proto::EncodeFrame(proto::EncodeRequest(GenerateRequest("One", 2))) +
                    proto::EncodeFrame(proto::EncodeRequest(HealthRequest()));
  ASSERT_TRUE(c.Write(two));
  auto first = c.Receive();
  auto second = c.Receive();
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->type, Response::Type::kGenerated);
  EXPECT_EQ(second->type, Response::Type::kHealth);
  ASSERT_TRUE(c.Write(proto::EncodeFrame(proto::EncodeRequest(HealthRequest()) + "junk")));
  auto junk = c.Receive();
  ASSERT_TRUE(junk.has_value());
  EXPECT_NE(junk->text.find("trailing bytes"), std::string::npos);
  ASSERT_TRUE(c.Send(HealthRequest()));
  auto after = c.Receive();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->type, Response::Type::kHealth) << "no desync";
}

// Structured output (GenerateParams::constraint): the tiny model's weights are random, so
// whatever it says is the grammar's doing.
TEST_F(DaemonProtocolTest, JsonSchemaConstraintGivesJsonThatFollowsIt) {
  const std::string schema =
      R"({"type":"object","properties":{"answer":{"type":"string","enum":["yes","no"]},)"
      R"("n":{"type":"integer","minimum":1,"maximum":9}},"required":["answer","n"],"additionalProperties":false})";
  for (const char* prompt : {"Is the sky blue? Answer in JSON.", "Pick a number.", "Hello"}) {
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.Send(Constrained(prompt, Constraint::Kind::kJsonSchema, schema)));
    StreamReply reply = ReadStream(c);
    ASSERT_TRUE(reply.last.has_value()) << prompt;
    ASSERT_EQ(reply.last->type, Response::Type::kDone) << reply.last->text;
    EXPECT_EQ(reply.last->stats.finish_reason, proto::FinishReason::kStop) << "the JSON ended: " << reply.text;
    auto json = nlohmann::json::parse(reply.text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(json.is_discarded()) << "not JSON: " << reply.text;
    ASSERT_TRUE(json.is_object()) << reply.text;
    EXPECT_EQ(json.size(), 2u) << "no other properties: " << reply.text;
    ASSERT_TRUE(json.contains("answer") && json["answer"].is_string()) << reply.text;
    EXPECT_TRUE(json["answer"] == "yes" || json["answer"] == "no") << reply.text;
    ASSERT_TRUE(json.contains("n") && json["n"].is_number_integer()) << reply.text;
    EXPECT_GE(json["n"].get<int>(), 1) << reply.text;
    EXPECT_LE(json["n"].get<int>(), 9) << reply.text;
  }
  ExpectServing();
}

TEST_F(DaemonProtocolTest, GbnfConstraintHoldsStreamsAndChatTurns) {
  const std::string grammar = R"(root ::= "yes" | "no")";
  const std::set<std::string> allowed = {"yes", "no"};
  for (const char* prompt : {"Is water wet?", "Tell me a long story.", "Hi"}) {
    RawConn c(daemon_->socket());
    ASSERT_TRUE(c.Send(Constrained(prompt, Constraint::Kind::kGbnfGrammar, grammar)));
    StreamReply reply = ReadStream(c);
    ASSERT_TRUE(reply.last.has_value());
    ASSERT_EQ(reply.last->type, Response::Type::kDone) << reply.last->text;
    EXPECT_EQ(allowed.count(reply.text), 1u) << "got '" << reply.text << "'";
    EXPECT_EQ(reply.last->stats.finish_reason, proto::FinishReason::kStop);
  }
  // A chat turn carries it in the same place; the next turn, unconstrained, is free again.
  RawConn c(daemon_->socket());
  proto::Request turn = Constrained("Is water wet?", Constraint::Kind::kGbnfGrammar, grammar);
  turn.type = proto::Request::Type::kChat;
  turn.session = "structured";
  ASSERT_TRUE(c.Send(turn));
  StreamReply first = ReadStream(c);
  ASSERT_TRUE(first.last.has_value());
  ASSERT_EQ(first.last->type, Response::Type::kDone) << first.last->text;
  EXPECT_EQ(allowed.count(first.text), 1u) << "got '" << first.text << "'";
  turn.params.constraint = Constraint{Constraint::Kind::kGbnfGrammar, R"(root ::= "ok")"};
  turn.prompt = "And now?";
  ASSERT_TRUE(c.Send(turn));
  StreamReply second = ReadStream(c);
  ASSERT_TRUE(second.last.has_value());
  ASSERT_EQ(second.last->type, Response::Type::kDone) << second.last->text;
  EXPECT_EQ(second.text, "ok");
  EXPECT_GT(second.last->stats.cached_tokens, first.last->stats.prompt_tokens - 1) << "the session went on";
  LlmClient client(daemon_->socket());
  EXPECT_FALSE(client.EndSession("structured").has_value());
}

TEST_F(DaemonProtocolTest, InvalidSchemasAndGrammarsAreErrorsNamingTheProblem) {
  struct Case {
    Constraint::Kind kind;
    std::string text;
    std::string says;  // part of the message
  };
  const std::vector<Case> cases = {
      {Constraint::Kind::kJsonSchema, R"({"type":"object",)", "the JSON schema must be a JSON object"},
      {Constraint::Kind::kJsonSchema, "[1, 2]", "the JSON schema must be a JSON object"},
      {Constraint::Kind::kJsonSchema, R"({"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}})",
       "the JSON schema cannot be enforced"},
      {Constraint::Kind::kGbnfGrammar, R"(root ::= "yes)", "the grammar does not parse"},
      {Constraint::Kind::kGbnfGrammar, "root ::= undefined-rule", "the grammar does not parse"},
      {Constraint::Kind::kGbnfGrammar, R"(answer ::= "yes")", "the grammar does not parse"},  // no root
      {Constraint::Kind::kGbnfGrammar, " \n", "the GBNF grammar is empty"},
  };
  RawConn c(daemon_->socket());  // one connection throughout: each error leaves it usable
  for (const Case& k : cases) {
    ASSERT_TRUE(c.Send(Constrained("Is water wet?", k.kind, k.text)));
    auto r = c.Receive(120000);
    ASSERT_TRUE(r.has_value()) << k.text;
    ASSERT_EQ(r->type, Response::Type::kError) << k.text;
    EXPECT_EQ(r->code, ErrorCode::kInvalidPrompt) << k.text << ": " << r->text;
    EXPECT_NE(r->text.find(k.says), std::string::npos) << k.text << ": " << r->text;
    // The daemon goes on serving, on this connection too: a constrained request works.
    ASSERT_TRUE(c.Send(Constrained("Is water wet?", Constraint::Kind::kGbnfGrammar, R"(root ::= "no")")));
    StreamReply next = ReadStream(c);
    ASSERT_TRUE(next.last.has_value());
    ASSERT_EQ(next.last->type, Response::Type::kDone) << next.last->text;
    EXPECT_EQ(next.text, "no");
  }
  ExpectServing();
}

TEST_F(DaemonProtocolTest, OversizedConstraintsAndUnknownKindsAreRefusedOnTheWire) {
  RawConn c(daemon_->socket());
  ASSERT_TRUE(c.Send(Constrained("Hi", Constraint::Kind::kGbnfGrammar, std::string(40000, 'x'))));
  auto big = c.Receive();
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->code, ErrorCode::kInvalidPrompt);
  EXPECT_EQ(big->text, "bad request: constraint: string length 40000 is over the 32768-byte limit");
  std::string payload = proto::EncodeRequest(Constrained("Hi", Constraint::Kind::kGbnfGrammar, R"(root ::= "a")"));
  const size_t kind_at = payload.size() - 15;  // kind, length 12, the grammar, draft_max: None
  ASSERT_EQ(payload[kind_at], '\x01');
  payload[kind_at] = '\x05';
  ASSERT_TRUE(c.Write(proto::EncodeFrame(payload)));
  auto unknown = c.Receive();
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code, ErrorCode::kUnsupported);
  EXPECT_EQ(unknown->text, "bad request: constraint: unsupported constraint kind 5 (0: JSON schema, 1: GBNF grammar)");
  ASSERT_TRUE(c.Send(HealthRequest()));
  auto h = c.Receive();
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->type, Response::Type::kHealth) << "no desync";
}

TEST(DaemonHealth, IsAnsweredWhileAGenerationRuns) {
  DaemonProcess d({"--max-new-tokens", "4096", "--temperature", "0"});
  ASSERT_TRUE(d.ready());
  RawConn gen(d.socket());
  ASSERT_TRUE(gen.Send(GenerateRequest("Write a very long essay.", 4096, /*stream=*/true)));
  auto first = gen.Receive();
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->type, Response::Type::kToken) << "generation is running";
  LlmClient client(d.socket());
  auto h = client.HealthCheck();
  ASSERT_TRUE(h.has_value());
  EXPECT_TRUE(h->model_loaded);
  EXPECT_GT(h->kv_cache_usage, 0.0f) << "real usage while a sequence is resident";
  // The answer came while the stream was still producing: it did not wait for the engine.
  bool finished = false;
  while (auto r = gen.Receive(0)) finished |= r->type != Response::Type::kToken;
  EXPECT_FALSE(finished) << "the generation had already ended; the test proves nothing";
}

TEST(DaemonBatching, FourInterleavedStreamsEachMatchTheirSoloRun) {
  DaemonProcess d({"--parallel", "4", "--max-new-tokens", "4096"});
  ASSERT_TRUE(d.ready()) << d.log();
  const std::vector<std::string> prompts = {"Tell me about the sea.", "Write a poem about rain.",
                                            "List some prime numbers.", "Describe a busy city street at night."};
  GenerateOptions o;
  o.max_tokens = 200;
  o.temperature = 0.0f;
  LlmClient client(d.socket());
  std::vector<std::string> solo;
  for (const auto& p : prompts) {
    auto g = client.GenerateStream(p, o, nullptr);
    ASSERT_TRUE(g.has_value()) << g.error().ToString();
    solo.push_back(g->text);
  }
  ExpectConcurrentStreamsMatchSolo(d.socket(), prompts, o, solo);
}

// After a busy period that served several requests at once, a burst of new requests shares
// one prefill step (the admission window) instead of the late ones waiting behind the first
// one's whole prompt. Asserted by structure: the scheduler's step counter at which each
// request's prefill began (the "generated" log line), never by time. The window is made long
// here so a slow machine cannot split the burst; it still ends as soon as every slot has a
// request, which is the property under test.
TEST(DaemonBatching, ABurstAfterConcurrentWorkSharesOnePrefillStep) {
  DaemonProcess d({"--parallel", "4", "--admission-window-ms", "60000", "--log-level", "debug"});
  ASSERT_TRUE(d.ready()) << d.log();
  GenerateOptions o;
  o.temperature = 0.0f;
  // A busy period serving two at once: a long stream, and a short request sent while it runs.
  {
    LlmClient c(d.socket(), std::chrono::seconds(120));
    std::atomic<bool> first_token{false}, long_ended{false};
    std::thread long_one([&] {
      GenerateOptions lo = o;
      lo.max_tokens = 256;
      LlmClient lc(d.socket(), std::chrono::seconds(120));
      (void)lc.GenerateStream("Tell me a long story.", lo, [&](std::string_view) {
        first_token = true;
        return true;
      });
      long_ended = true;
    });
    // No ASSERT while the long stream's thread runs: an early return would destroy it unjoined.
    WaitFor([&] { return first_token.load() || long_ended.load(); });  // liveness only
    EXPECT_TRUE(first_token.load()) << "the long stream never started";
    GenerateOptions so = o;
    so.max_tokens = 2;
    EXPECT_TRUE(c.GenerateStream("Hello there.", so, nullptr).has_value());
    long_one.join();
  }
  const size_t before = d.CountLog("llmd debug generated ");
  std::string words;
  for (int i = 0; i < 90; ++i) words += " river";
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      LlmClient c(d.socket(), std::chrono::seconds(120));
      GenerateOptions bo = o;
      bo.max_tokens = 2;
      auto g = c.GenerateStream("Client " + std::to_string(i) + ":" + words, bo, nullptr);
      EXPECT_TRUE(g.has_value()) << "request " << i << " failed";
    });
  }
  for (auto& t : threads) t.join();
  // The burst's four "generated" lines, after the ones before it.
  std::vector<std::string> steps;
  const std::string log = d.log();
  size_t at = 0;
  for (size_t n = 0; (at = log.find("llmd debug generated ", at)) != std::string::npos; ++n, ++at) {
    if (n < before) continue;
    const size_t key = log.find("prefill_step=", at);
    ASSERT_NE(key, std::string::npos);
    steps.push_back(log.substr(key + 13, log.find_first_of(" \n", key) - key - 13));
  }
  ASSERT_EQ(steps.size(), 4u) << log;
  for (int i = 1; i < 4; ++i) EXPECT_EQ(steps[i], steps[0]) << "request " << i << " began its prefill in another step";
}

TEST_F(DaemonProtocolTest, ChatSessionsReuseThePreviousTurn) {
  LlmClient client(daemon_->socket());
  GenerateOptions o;
  o.max_tokens = 8;
  o.temperature = 0.0f;
  auto t1 = client.Chat("s1", "Hello!", o, nullptr);
  ASSERT_TRUE(t1.has_value()) << t1.error().ToString();
  EXPECT_LT(t1->cached_tokens, t1->prompt_tokens) << "a new session may reuse a shared template prefix, not its own turn";
  auto t2 = client.Chat("s1", "And then?", o, nullptr);
  ASSERT_TRUE(t2.has_value());
  const uint32_t history = t1->prompt_tokens + t1->tokens_generated;
  // Turn 1's prompt is reused; its reply was decoded as generation steps, which a cold
  // prefill of turn 2 is not, so it is prefilled again with turn 2's text (both prompts are
  // under 64 tokens: their rows are computed alike, engine/prompt_kernels.h).
  EXPECT_EQ(t2->cached_tokens, t1->prompt_tokens) << "turn 2 reuses turn 1's prompt";
  EXPECT_GT(t2->prompt_tokens, history);
  // Another session is independent; ending one forgets it.
  auto other = client.Chat("s2", "Hello!", o, nullptr);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->prompt_tokens, t1->prompt_tokens);
  EXPECT_EQ(other->text, t1->text);
  EXPECT_FALSE(client.EndSession("s1").has_value());
  auto gone = client.EndSession("s1");
  ASSERT_TRUE(gone.has_value());
  EXPECT_EQ(gone->kind, ClientError::Kind::kServerError);
  auto fresh = client.Chat("s1", "Hello!", o, nullptr);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(fresh->prompt_tokens, t1->prompt_tokens) << "a new conversation";
}

TEST_F(DaemonProtocolTest, StatsAndModels) {
  LlmClient client(daemon_->socket());
  ASSERT_TRUE(client.Generate("Hello", 4).has_value());
  ASSERT_TRUE(client.Generate("Hello", 4).has_value());
  auto st = client.Stats();
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  EXPECT_GE(st->requests, 2u);
  EXPECT_GT(st->generated_tokens, 0u);
  EXPECT_GT(st->ttft_p50_ms, 0.0f);
  EXPECT_GE(st->ttft_p95_ms, st->ttft_p50_ms);
  EXPECT_GT(st->cached_token_ratio, 0.0f) << "the repeated prompt was reused";
  auto models = client.Models();
  ASSERT_TRUE(models.has_value());
  EXPECT_EQ(*models, std::vector<std::string>{"tiny-q8_0"});
}

TEST(DaemonQueue, AFullQueueAnswersBusyAndNeverBlocks) {
  // No spare sequences: the second request waits in the queue (with them it would take one to
  // compute its prompt ahead).
  DaemonProcess d({"--parallel", "1", "--reserved-sequences", "0", "--queue-depth", "1", "--max-new-tokens", "4096"});
  ASSERT_TRUE(d.ready());
  RawConn running(d.socket()), queued(d.socket()), third(d.socket());
  ASSERT_TRUE(running.Send(GenerateRequest("Write forever.", 4000, true)));
  ASSERT_TRUE(running.Receive().has_value()) << "the only slot is busy";
  ASSERT_TRUE(queued.Send(GenerateRequest("Then this.", 4000, true)));
  // The third asks once the second waits in the queue, so the queue has no room for it.
  proto::Request stats;
  stats.type = proto::Request::Type::kStats;
  ASSERT_TRUE(WaitFor([&] {
    if (!third.Send(stats)) return false;
    auto s = third.Receive(60000);  // liveness only
    return s.has_value() && s->type == Response::Type::kServerStats && s->server_stats.queued == 1;
  })) << "the second request never reached the queue";
  ASSERT_TRUE(third.Send(GenerateRequest("And this.", 4000, true)));
  auto r = third.Receive(60000);  // liveness only
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, Response::Type::kError);
  EXPECT_EQ(r->code, ErrorCode::kBusy);
  EXPECT_NE(r->text.find("queue is full"), std::string::npos);
}

// A daemon of its own: the fixture's 64-token cap would let the stream end (every frame
// already in the socket's buffer) before a client descheduled on a loaded CI machine closes,
// and then there is nothing to cancel. 4,096 tokens (the most a request may ask) outlast any
// such delay by seconds.
TEST(DaemonProtocolCancel, Item40_DisconnectCancelsAndTheNextRequestIsCorrect) {
  DaemonProcess daemon({"--temperature", "0", "--context", "8192", "--max-new-tokens", "4096"});
  ASSERT_TRUE(daemon.ready()) << daemon.log();
  LlmClient client(daemon.socket());
  auto reference = client.Generate("Count slowly.", 16);
  ASSERT_TRUE(reference.has_value()) << reference.error().ToString();
  {
    RawConn c(daemon.socket());  // mid-stream
    ASSERT_TRUE(c.Send(GenerateRequest("Write a very long essay about the sea.", 4096, true)));
    auto first = c.Receive();
    ASSERT_TRUE(first.has_value());
    ASSERT_EQ(first->type, Response::Type::kToken) << "the stream ended before its first token";
  }
  {
    // Before the first token: the daemon may see the peer gone before it runs the request,
    // and then runs nothing; either way the slot must come free.
    RawConn c(daemon.socket());
    ASSERT_TRUE(c.Send(GenerateRequest(std::string(3000, 'a'), 256, true)));
  }
  // The mid-stream generation was cancelled (its handler saw the peer go) and every slot was
  // freed (the waits are liveness bounds only).
  EXPECT_TRUE(daemon.WaitForLog("llmd info client_gone")) << "no cancellation was logged\n" << daemon.log();
  std::string active = "?";
  EXPECT_TRUE(WaitFor([&] {
    auto st = client.Stats();
    active = st.has_value() ? std::to_string(st->active) : st.error().ToString();
    return st.has_value() && st->active == 0;
  })) << "the cancelled generations still hold their slots: " << active << " active";
  auto next = client.Generate("Count slowly.", 16);
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(next->text, reference->text) << "the freed slot gives correct output";
}

TEST_F(DaemonProtocolTest, Item41_HalfCloseStillGetsTheWholeReply) {
  RawConn c(daemon_->socket());
  ASSERT_TRUE(c.Send(GenerateRequest("Hello", 6)));
  ::shutdown(c.fd(), SHUT_WR);
  auto r = c.Receive();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, Response::Type::kGenerated);
  EXPECT_GT(r->tokens_generated, 0u);
}

TEST_F(DaemonProtocolTest, NoDescriptorsLeakAcrossAllOfThat) {
  const int before = daemon_->FdCount();
  for (int i = 0; i < 50; ++i) {
    RawConn c(daemon_->socket());
    c.Send(HealthRequest());
    c.Receive();
  }
  // Each handler closes its descriptor once it sees its peer go.
  EXPECT_TRUE(WaitFor([&] { return daemon_->FdCount() <= before + 1; }))
      << daemon_->FdCount() << " descriptors open, " << before << " before";
}

}  // namespace
}  // namespace llmd::testing
