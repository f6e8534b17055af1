// The bytes in docs/protocol.md, checked both ways.
#include "proto/messages.h"

#include <gtest/gtest.h>

#include <random>

#include "proto/frame_codec.h"

namespace llmd::proto {
namespace {

std::string Hex(std::string_view bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

Request Generate(std::string prompt, std::optional<uint32_t> max_tokens) {
  Request r;
  r.type = Request::Type::kGenerate;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  return r;
}

void ExpectRequestBytes(const Request& r, const std::string& hex) {
  EXPECT_EQ(Hex(EncodeRequest(r)), hex);
  auto back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, r);
}

void ExpectResponseBytes(const Response& r, const std::string& hex) {
  EXPECT_EQ(Hex(EncodeResponse(r)), hex);
  auto back = DecodeResponse(EncodeResponse(r));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, r);
}

TEST(Messages, SeedRequestsMatchTheDocumentedBytes) {
  ExpectRequestBytes(Generate("Hello", 64), "00 05 48 65 6c 6c 6f 01 40");
  ExpectRequestBytes(Generate("Hi", std::nullopt), "00 02 48 69 00");
  Request health;
  health.type = Request::Type::kHealthCheck;
  ExpectRequestBytes(health, "01");
  Request shutdown;
  shutdown.type = Request::Type::kShutdown;
  ExpectRequestBytes(shutdown, "02");
  EXPECT_EQ(Hex(EncodeFrame(EncodeRequest(Generate("Hello", 64)))),
            "00 00 00 09 00 05 48 65 6c 6c 6f 01 40");
}

TEST(Messages, StreamRequestMatchesTheDocumentedBytes) {
  Request r = Generate("Hi", 300);
  r.type = Request::Type::kGenerateStream;
  r.params.temperature = 0.0f;
  r.params.seed = 7;
  ExpectRequestBytes(r, "03 02 48 69 01 ac 02 00 01 00 00 00 00 00 00 00 01 07 00 00 00 00");
  r.params.model = "guard";
  r.params.guard = true;
  ExpectRequestBytes(r, "03 02 48 69 01 ac 02 00 01 00 00 00 00 00 00 00 01 07 01 05 67 75 61 72 64 01 01 00 00");
}

Request ConstrainedStream(Constraint::Kind kind, std::string text) {
  Request r = Generate("Hi", 64);
  r.type = Request::Type::kGenerateStream;
  r.params.temperature = 0.0f;
  r.params.constraint = Constraint{kind, std::move(text)};
  return r;
}

// The field's bytes, offset by offset, as docs/protocol.md gives them.
TEST(Messages, ConstraintMatchesTheDocumentedBytes) {
  const std::string head = "03 02 48 69 01 40 00 01 00 00 00 00 00 00 00 00 00 00";
  ExpectRequestBytes(ConstrainedStream(Constraint::Kind::kGbnfGrammar, R"(root ::= "yes" | "no")"),
                     head + " 01 01 15 72 6f 6f 74 20 3a 3a 3d 20 22 79 65 73 22 20 7c 20 22 6e 6f 22 00");
  ExpectRequestBytes(ConstrainedStream(Constraint::Kind::kJsonSchema, R"({"type":"integer"})"),
                     head + " 01 00 12 7b 22 74 79 70 65 22 3a 22 69 6e 74 65 67 65 72 22 7d 00");
  // Chat carries it in the same place, after guard.
  Request chat = Generate("Hi", std::nullopt);
  chat.type = Request::Type::kChat;
  chat.session = "s1";
  chat.params.constraint = Constraint{Constraint::Kind::kGbnfGrammar, "root ::= \"a\""};
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 01 01 0c 72 6f 6f 74 20 3a 3a 3d 20 22 61 22 00");
}

TEST(Messages, ConstraintRoundTrips) {
  for (auto kind : {Constraint::Kind::kJsonSchema, Constraint::Kind::kGbnfGrammar}) {
    for (std::string text : {std::string(), std::string("root ::= [a-z]+ \"\u00e9\u4e2d\""),
                             std::string(300, 'x'), std::string(kMaxConstraintBytes, 'y')}) {
      Request r = ConstrainedStream(kind, text);
      r.params.model = "m";
      r.params.guard = false;
      auto back = DecodeRequest(EncodeRequest(r));
      ASSERT_TRUE(back.has_value()) << back.error().ToString();
      EXPECT_EQ(*back, r);
    }
  }
}

TEST(Messages, TruncatedConstraintIsRefusedAtEveryCut) {
  const std::string full = EncodeRequest(ConstrainedStream(Constraint::Kind::kJsonSchema, R"({"type":"integer"})"));
  const size_t end = full.size() - 1;                // draft_max: None follows it
  const size_t field = end - (1 + 1 + 1 + 18);  // Option tag, kind, length, text
  ASSERT_EQ(static_cast<uint8_t>(full[field]), 1u);
  for (size_t cut = field; cut < end; ++cut) {
    auto r = DecodeRequest(std::string_view(full).substr(0, cut));
    ASSERT_FALSE(r.has_value()) << "cut at " << cut;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    if (cut > field) {
      EXPECT_EQ(r.error().message().rfind("constraint: ", 0), 0u) << r.error().message();
    }
  }
  // A GenerateParams ending after constraint (an llmd client from before draft_max) is read
  // with draft_max unset: those clients keep working.
  auto pre_draft = DecodeRequest(std::string_view(full).substr(0, end));
  ASSERT_TRUE(pre_draft.has_value()) << pre_draft.error().message();
  EXPECT_FALSE(pre_draft->params.draft_max.has_value());
  EXPECT_TRUE(pre_draft->params.constraint.has_value());
  // A pre-constraint GenerateParams (ending after guard) is truncated too: the field is not
  // optional in the byte stream, as model and guard are not.
  auto old = DecodeRequest(std::string("\x03\x02Hi\x00\x00\x00\x00\x00\x00\x00\x00\x00", 13));
  ASSERT_FALSE(old.has_value());
  EXPECT_NE(old.error().message().find("truncated"), std::string::npos);
}

TEST(Messages, OversizedConstraintIsRefusedFromItsLength) {
  const std::string head = EncodeRequest(ConstrainedStream(Constraint::Kind::kGbnfGrammar, "")).substr(0, 20);
  ASSERT_EQ(head.substr(18), std::string("\x01\x01", 2));
  // One byte over the limit, the bytes all present.
  auto over = DecodeRequest(EncodeRequest(ConstrainedStream(Constraint::Kind::kGbnfGrammar,
                                                            std::string(kMaxConstraintBytes + 1, 'x'))));
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.error().message(), "constraint: string length 32769 is over the 32768-byte limit");
  // A huge declared length with nothing behind it: the limit, not the message's end, speaks.
  auto huge = DecodeRequest(head + std::string("\xff\xff\xff\xff\x0f", 5));
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().message(), "constraint: string length 4294967295 is over the 32768-byte limit");
}

TEST(Messages, UnknownConstraintKindIsUnsupported) {
  std::string bytes = EncodeRequest(ConstrainedStream(Constraint::Kind::kGbnfGrammar, "root ::= \"a\""));
  const size_t kind_at = 19;
  ASSERT_EQ(bytes[kind_at], '\x01');
  for (uint8_t kind : {2, 7, 0x80, 0xff}) {
    bytes[kind_at] = static_cast<char>(kind);
    auto r = DecodeRequest(bytes);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), StatusCode::kUnimplemented);
    EXPECT_EQ(r.error().message(), "constraint: unsupported constraint kind " + std::to_string(kind) +
                                       " (0: JSON schema, 1: GBNF grammar)");
  }
  bytes[kind_at - 1] = '\x02';  // the Option tag itself
  EXPECT_NE(DecodeRequest(bytes).error().message().find("invalid Option tag 2"), std::string::npos);
}

TEST(Messages, ConstraintTextMustBeUtf8) {
  auto r = DecodeRequest(EncodeRequest(ConstrainedStream(Constraint::Kind::kJsonSchema, "{\"a\":\"\xc0\xaf\"}")));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "constraint: string is not valid UTF-8");
  Request last_field = ConstrainedStream(Constraint::Kind::kJsonSchema, "{}");
  last_field.params.overflow = kOverflowDropOldest;  // the last field, so "x" is past the end
  auto trailing = DecodeRequest(EncodeRequest(last_field) + "x");
  ASSERT_FALSE(trailing.has_value());
  EXPECT_NE(trailing.error().message().find("trailing bytes"), std::string::npos);
}

// The seed's three requests carry no params: a constraint set on one is never written, so
// their bytes stay the reference daemon's.
TEST(Messages, SeedRequestBytesIgnoreTheConstraint) {
  Request g = Generate("Hello", 64);
  g.params.constraint = Constraint{Constraint::Kind::kGbnfGrammar, "root ::= \"x\""};
  EXPECT_EQ(Hex(EncodeRequest(g)), "00 05 48 65 6c 6c 6f 01 40");
  for (auto type : {Request::Type::kHealthCheck, Request::Type::kShutdown}) {
    Request r;
    r.type = type;
    r.params = g.params;
    EXPECT_EQ(EncodeRequest(r).size(), 1u);
  }
}

TEST(Messages, ResponsesMatchTheDocumentedBytes) {
  Response gen;
  gen.type = Response::Type::kGenerated;
  gen.text = "Hi!";
  gen.tokens_generated = 3;
  ExpectResponseBytes(gen, "00 03 48 69 21 03");
  ExpectResponseBytes(Response::Error(ErrorCode::kInvalidPrompt, "empty"),
                      "01 02 05 65 6d 70 74 79");
  Response health;
  health.type = Response::Type::kHealth;
  health.model_loaded = true;
  health.npu_core = 0;
  health.kv_cache_usage = 0.25f;
  ExpectResponseBytes(health, "02 01 00 00 00 80 3e");
  Response token;
  token.type = Response::Type::kToken;
  token.text = "Hi";
  ExpectResponseBytes(token, "03 02 48 69");
  Response done;
  done.type = Response::Type::kDone;
  done.tokens_generated = 5;
  done.stats = {12, 0, 1.5f, 2.0f, 10.0f, FinishReason::kLength, 0.0f};
  ExpectResponseBytes(done, "04 05 0c 00 00 00 c0 3f 00 00 00 40 00 00 20 41 01 00 00 00 00 00 00 00 00");
}

TEST(Messages, SessionStatsAndModelMessagesMatchTheDocumentedBytes) {
  Request chat = Generate("Hi", std::nullopt);
  chat.type = Request::Type::kChat;
  chat.session = "s1";
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 00 00");
  Request end;
  end.type = Request::Type::kEndSession;
  end.session = "s1";
  ExpectRequestBytes(end, "05 02 73 31");
  Request stats;
  stats.type = Request::Type::kStats;
  ExpectRequestBytes(stats, "06");
  Request models;
  models.type = Request::Type::kModels;
  ExpectRequestBytes(models, "07");
  for (auto [type, hex] : {std::pair{Request::Type::kSaveSession, "08 02 73 31"},
                           std::pair{Request::Type::kRestoreSession, "09 02 73 31"},
                           std::pair{Request::Type::kDeleteSession, "0a 02 73 31"}}) {
    Request r;
    r.type = type;
    r.session = "s1";
    ExpectRequestBytes(r, hex);
  }
  Response ack;
  ack.type = Response::Type::kAck;
  ExpectResponseBytes(ack, "05");
  Response list;
  list.type = Response::Type::kModels;
  list.models = {"qwen3", "guard"};
  ExpectResponseBytes(list, "07 02 05 71 77 65 6e 33 05 67 75 61 72 64");
  Response st;
  st.type = Response::Type::kServerStats;
  st.server_stats = {3, 300, 10.0f, 20.0f, 0, 0, 0.5f, 1, 0, 2};
  ExpectResponseBytes(st, "06 03 ac 02 00 00 20 41 00 00 a0 41 00 00 00 00 00 00 00 00 00 00 00 3f 01 00 02 00 00 00");
  // llmd's appended memory: an Option of seven varints (MiB, and the release count); then the
  // draft counters.
  st.server_stats.memory = proto::MemoryStats{358, 896, 12, 28, 0, 420, 1};
  ExpectResponseBytes(st, "06 03 ac 02 00 00 20 41 00 00 a0 41 00 00 00 00 00 00 00 00 00 00 00 3f 01 00 02 "
                          "01 e6 02 80 07 0c 1c 00 a4 03 01 00 00");
}

// draft_max is the last field of GenerateParams, after constraint; Some(0) turns speculative
// decoding off for the request.
TEST(Messages, DraftMaxMatchesTheDocumentedBytes) {
  Request r = Generate("Hi", 64);
  r.type = Request::Type::kGenerateStream;
  r.params.draft_max = 0;
  ExpectRequestBytes(r, "03 02 48 69 01 40 00 00 00 00 00 00 00 00 00 01 00");
  r.params.draft_max = 300;
  r.params.constraint = Constraint{Constraint::Kind::kGbnfGrammar, "root ::= \"a\""};
  ExpectRequestBytes(r, "03 02 48 69 01 40 00 00 00 00 00 00 00 00 01 01 0c 72 6f 6f 74 20 3a 3a 3d 20 22 61 22 01 ac 02");
  Request chat = Generate("Hi", std::nullopt);
  chat.type = Request::Type::kChat;
  chat.session = "s1";
  chat.params.draft_max = 8;
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 00 01 08");
  auto cut = DecodeRequest(EncodeRequest(chat).substr(0, EncodeRequest(chat).size() - 1));
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message().find("truncated"), std::string::npos) << cut.error().message();
  // The seed's Generate carries no params: its bytes stay the reference daemon's.
  Request g = Generate("Hello", 64);
  g.params.draft_max = 2;
  EXPECT_EQ(Hex(EncodeRequest(g)), "00 05 48 65 6c 6c 6f 01 40");
}

// request_class follows draft_max, and is written only when set: a request without it keeps
// its bytes, and one from before it (ending at draft_max, or before) reads it as None.
TEST(Messages, RequestClassMatchesTheDocumentedBytes) {
  Request r = Generate("Hi", 64);
  r.type = Request::Type::kGenerateStream;
  r.params.request_class = 2;
  ExpectRequestBytes(r, "03 02 48 69 01 40 00 00 00 00 00 00 00 00 00 00 01 02");
  r.params.request_class = 0;
  r.params.draft_max = 8;
  ExpectRequestBytes(r, "03 02 48 69 01 40 00 00 00 00 00 00 00 00 00 01 08 01 00");
  r.params.request_class.reset();
  auto old = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->params.request_class.has_value());
  std::string bytes = EncodeRequest(r) + std::string("\x01\x03", 2);  // Some(3)
  auto bad = DecodeRequest(bytes);
  r.params.request_class.reset();
  r.params.draft_max.reset();
  r.params.first_token_deadline_ms = 300;  // after request_class, which is then written as None
  ExpectRequestBytes(r, "03 02 48 69 01 40 00 00 00 00 00 00 00 00 00 00 00 01 ac 02");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("request_class 3 is not a class"), std::string::npos) << bad.error().message();
}

// Done's draft counters follow guard_ms; a Done from an older llmd ends at guard_ms and reads
// them as 0.
TEST(Messages, DoneDraftCounters) {
  Response done;
  done.type = Response::Type::kDone;
  done.tokens_generated = 5;
  done.stats = {12, 0, 1.5f, 2.0f, 10.0f, FinishReason::kStop, 0.0f, 200, 150};
  ExpectResponseBytes(done, "04 05 0c 00 00 00 c0 3f 00 00 00 40 00 00 20 41 00 00 00 00 00 c8 01 96 01 00 00");
  const std::string older("\x04\x05\x0c\x00\x00\x00\xc0\x3f\x00\x00\x00\x40\x00\x00\x20\x41\x01\x00\x00\x00\x00", 21);
  auto back = DecodeResponse(older);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->stats.guard_ms, 0.0f);
  EXPECT_EQ(back->stats.finish_reason, FinishReason::kLength);
  EXPECT_EQ(back->stats.draft_tokens, 0u);
  EXPECT_EQ(back->stats.accepted_draft_tokens, 0u);
  // One counter without the other is a cut message, not an older one.
  auto half = DecodeResponse(older + "\x05");
  ASSERT_FALSE(half.has_value());
  auto trailing = DecodeResponse(EncodeResponse(done) + "x");
  ASSERT_FALSE(trailing.has_value());
  EXPECT_NE(trailing.error().message().find("trailing bytes"), std::string::npos);
}

// overflow follows first_token_deadline_ms, written only when set (the fields before it as
// None then); a request without it keeps its bytes, and a value past drop_oldest is refused.
TEST(Messages, ChatOverflowPolicy) {
  Request chat = Generate("Hi", std::nullopt);
  chat.type = Request::Type::kChat;
  chat.session = "s1";
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 00 00");
  chat.params.overflow = kOverflowDropOldest;
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 00 00 00 00 01 01");
  chat.params.overflow = kOverflowError;
  ExpectRequestBytes(chat, "04 02 73 31 02 48 69 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00");
  chat.params.overflow.reset();
  chat.params.first_token_deadline_ms = 300;  // a request from before overflow ends here
  auto older = DecodeRequest(EncodeRequest(chat));
  ASSERT_TRUE(older.has_value()) << older.error().ToString();
  EXPECT_FALSE(older->params.overflow.has_value());
  auto bad = DecodeRequest(EncodeRequest(chat) + std::string("\x01\x02", 2));  // Some(2)
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "overflow 2 is not a policy (0 error, 1 drop_oldest)");
}

// Done's drop counters follow the draft counters; a Done from an older llmd ends before them
// and reads them as 0.
TEST(Messages, DoneDropCounters) {
  Response done;
  done.type = Response::Type::kDone;
  done.tokens_generated = 5;
  done.stats = {12, 0, 1.5f, 2.0f, 10.0f, FinishReason::kStop, 0.0f, 0, 0, 300, 2};
  ExpectResponseBytes(done, "04 05 0c 00 00 00 c0 3f 00 00 00 40 00 00 20 41 00 00 00 00 00 00 00 ac 02 02");
  const std::string older("\x04\x05\x0c\x00\x00\x00\xc0\x3f\x00\x00\x00\x40\x00\x00\x20\x41\x00\x00\x00\x00\x00"
                          "\xc8\x01\x96\x01", 25);
  auto back = DecodeResponse(older);
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(back->stats.accepted_draft_tokens, 150u);
  EXPECT_EQ(back->stats.dropped_tokens, 0u);
  EXPECT_EQ(back->stats.dropped_turns, 0u);
  EXPECT_FALSE(DecodeResponse(older + "\x05").has_value());  // one counter without the other: cut
}

// ServerStats from three generations of llmd: without memory, with memory and no draft
// counters, and with both.
TEST(Messages, ServerStatsDraftCounters) {
  const std::string head("\x06\x03\xac\x02\x00\x00\x20\x41\x00\x00\xa0\x41\x00\x00\x00\x00\x00\x00\x00\x00"
                         "\x00\x00\x00\x3f\x01\x00\x02", 27);
  const std::string memory("\x01\xe6\x02\x80\x07\x0c\x1c\x00\xa4\x03\x01", 11);
  auto pre_memory = DecodeResponse(head);
  ASSERT_TRUE(pre_memory.has_value()) << pre_memory.error().ToString();
  EXPECT_FALSE(pre_memory->server_stats.memory.has_value());
  EXPECT_EQ(pre_memory->server_stats.sessions, 2u);
  EXPECT_EQ(pre_memory->server_stats.draft_tokens, 0u);
  auto pre_draft = DecodeResponse(head + memory);
  ASSERT_TRUE(pre_draft.has_value()) << pre_draft.error().ToString();
  ASSERT_TRUE(pre_draft->server_stats.memory.has_value());
  EXPECT_EQ(pre_draft->server_stats.memory->working_memory_releases, 1u);
  EXPECT_EQ(pre_draft->server_stats.draft_tokens, 0u);
  EXPECT_EQ(pre_draft->server_stats.accepted_draft_tokens, 0u);

  Response st;
  st.type = Response::Type::kServerStats;
  st.server_stats = {3, 300, 10.0f, 20.0f, 0, 0, 0.5f, 1, 0, 2};
  st.server_stats.memory = proto::MemoryStats{358, 896, 12, 28, 0, 420, 1};
  st.server_stats.draft_tokens = 1000;
  st.server_stats.accepted_draft_tokens = 640;
  ExpectResponseBytes(st, "06 03 ac 02 00 00 20 41 00 00 a0 41 00 00 00 00 00 00 00 00 00 00 00 3f 01 00 02 "
                          "01 e6 02 80 07 0c 1c 00 a4 03 01 e8 07 80 05");
  st.server_stats.memory.reset();  // the counters still follow, after memory: None
  ExpectResponseBytes(st, "06 03 ac 02 00 00 20 41 00 00 a0 41 00 00 00 00 00 00 00 00 00 00 00 3f 01 00 02 "
                          "00 e8 07 80 05");
}

// The per-client rows follow the draft counters, and only when there are any: a reply that
// ends at accepted_draft_tokens (an older llmd's) reads as none.
TEST(Messages, ServerStatsClientRows) {
  Response st;
  st.type = Response::Type::kServerStats;
  st.server_stats = {3, 300, 10.0f, 20.0f, 0, 0, 0.5f, 1, 0, 2};
  const std::string older = "06 03 ac 02 00 00 20 41 00 00 a0 41 00 00 00 00 00 00 00 00 00 00 00 3f 01 00 02 00 00 00";
  ExpectResponseBytes(st, older);  // no client yet: the bytes of an llmd from before the rows
  auto back = DecodeResponse(EncodeResponse(st));
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_TRUE(back->server_stats.clients.empty());

  st.server_stats.clients = {ClientStats{.uid = "1000",
                                         .request_class = 2,
                                         .requests = 5,
                                         .refused_budget = 2,
                                         .queue_wait_ms = 12.5f,
                                         .ttft_ms = 96.0f,
                                         .prompt_tokens = 400,
                                         .cached_tokens = 100,
                                         .generated_tokens = 64,
                                         .preemptions = 1}};
  const std::string row = "01 04 31 30 30 30 02 05 02 00 00 00 00 00 48 41 00 00 c0 42 90 03 64 40 01";
  ExpectResponseBytes(st, older + " " + row);

  // A row's class is one of the three; its count cannot exceed the message.
  const size_t head = (older.size() + 1) / 3;  // the 30 bytes before the rows
  std::string bad_class = EncodeResponse(st);
  bad_class[head + 1 + 5] = '\x03';  // the class byte, after the count and "1000"
  auto refused = DecodeResponse(bad_class);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("client request_class 3 is not a class"), std::string::npos)
      << refused.error().message();
  std::string too_many = EncodeResponse(st);
  too_many[head] = '\x7f';
  ASSERT_FALSE(DecodeResponse(too_many).has_value());
  ASSERT_FALSE(DecodeResponse(EncodeResponse(st).substr(0, EncodeResponse(st).size() - 1)).has_value())
      << "a cut row is a cut message";
}

TEST(Messages, ErrorCodesKeepTheSeedOrder) {
  EXPECT_EQ(static_cast<uint32_t>(ErrorCode::kModelNotLoaded), 0u);
  EXPECT_EQ(static_cast<uint32_t>(ErrorCode::kPermissionDenied), 5u);
  EXPECT_EQ(ErrorCodeName(ErrorCode::kBusy), "Busy");
  EXPECT_EQ(kSeedErrorCodes, 6u);
}

TEST(Messages, RejectsMalformedRequests) {
  auto err = [](std::string bytes) {
    auto r = DecodeRequest(bytes);
    EXPECT_FALSE(r.has_value()) << Hex(bytes);
    return r.has_value() ? std::string() : r.error().message();
  };
  EXPECT_EQ(err(std::string("\x2a", 1)), "unsupported request variant 42");
  EXPECT_EQ(DecodeRequest("\x2a").error().code(), StatusCode::kUnimplemented);
  EXPECT_NE(err(std::string("\x00\x10Hi\x00", 5)).find("string length 16 exceeds"), std::string::npos);
  EXPECT_NE(err(std::string("\x00\xff\xff\xff\xff\x0f", 6)).find("exceeds"), std::string::npos);
  EXPECT_NE(err(std::string("\x00\xff\xff\xff\xff\x7f", 6)).find("overflows"), std::string::npos);
  EXPECT_NE(err(std::string("\x00\x02\xc0\xaf\x00", 5)).find("UTF-8"), std::string::npos);
  EXPECT_NE(err(std::string("\x00\x02Hi\x02", 5)).find("Option tag"), std::string::npos);
  EXPECT_NE(err(std::string("\x01junk", 5)).find("trailing bytes"), std::string::npos);
  EXPECT_NE(err(std::string("\x00\x02H", 3)).find("exceeds"), std::string::npos);
  EXPECT_NE(err(""), "");
}

// Model management: PullModel, CopyModel, DeleteModel, RunningModels and the PullProgress
// frame, byte for byte (docs/protocol.md).
TEST(Messages, ModelManagementRequestsAndPullProgress) {
  Request pull;
  pull.type = Request::Type::kPullModel;
  pull.model = "hf.co/a/b";
  ExpectRequestBytes(pull, "0b 09 68 66 2e 63 6f 2f 61 2f 62");
  Request copy;
  copy.type = Request::Type::kCopyModel;
  copy.model = "a";
  copy.destination = "b";
  ExpectRequestBytes(copy, "0c 01 61 01 62");
  Request del;
  del.type = Request::Type::kDeleteModel;
  del.model = "a";
  ExpectRequestBytes(del, "0d 01 61");
  Request running;
  running.type = Request::Type::kRunningModels;
  ExpectRequestBytes(running, "0e");
  Response progress;
  progress.type = Response::Type::kPullProgress;
  progress.pull_status = "p";
  progress.pull_completed = 300;
  progress.pull_total = uint64_t{5} << 32;  // past 32 bits: a u64 varint
  ExpectResponseBytes(progress, "08 01 70 ac 02 80 80 80 80 50");
  EXPECT_FALSE(DecodeRequest(std::string("\x0c\x01\x61", 3)).has_value()) << "CopyModel without its destination";
}

TEST(Messages, RandomPayloadsNeverCrash) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes(rng() % 32, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng() % 6 == 0 ? rng() % 5 : rng());
    (void)DecodeRequest(bytes);
    (void)DecodeResponse(bytes);
  }
}

}  // namespace
}  // namespace llmd::proto
