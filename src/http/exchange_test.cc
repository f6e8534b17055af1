// RunExchange and each API's sink over a scripted request runner: no engine, no socket. What
// a client of each API reads for each outcome (a reply, an error before and after the stream
// began, a client gone, a guard refusal), the event order of a streamed reply with reasoning,
// text and a tool call, and `n` choices on the server's threads.
#include "http/exchange.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/anthropic/anthropic_sink.h"
#include "http/ollama/ollama_sink.h"
#include "http/openai/openai_sink.h"
#include "http/responses/responses_sink.h"
#include "http/recording_responder.h"
#include "http/toy_reply_parser.h"

namespace llmd::http {
namespace {

using nlohmann::json;

// What the scripted runner does with each request: stream `pieces` (with `parser`), then end
// as `outcome` says, the completion's text the pieces joined.
struct Script {
  std::vector<std::string> pieces;
  std::shared_ptr<const engine::ReplyParser> parser;
  sched::RunOutcome::Kind kind = sched::RunOutcome::Kind::kDone;
  Status error;                // kError
  bool error_after_pieces = true;
  engine::FinishReason finish = engine::FinishReason::kStop;
};

class ScriptedEnv {
 public:
  explicit ScriptedEnv(Script script) : script_(std::move(script)) {
    auto c = std::make_shared<config::DaemonConfig>();
    c->embedding_models = {"embedder"};
    env.config = c;
    env.default_model = "m";
    env.run = [this](sched::RunRequest r) { return Run(std::move(r)); };
  }
  ExchangeEnv env;
  std::vector<sched::RunRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  sched::RunOutcome Run(sched::RunRequest r) {
    sched::RunOutcome out;
    engine::Completion& done = out.completion;
    for (const std::string& piece : script_.pieces) {
      done.text += piece;
      if (!r.job.stream || !r.on_text) continue;
      sched::JobEvent ev = sched::JobEvent::Text(piece);
      ev.parser = script_.parser;
      ev.logprobs = {{piece, -1.0f, {}}};
      if (!r.on_text(ev)) {
        out.kind = sched::RunOutcome::Kind::kPeerGone;
        return Record(std::move(r), std::move(out));
      }
    }
    done.parser = script_.parser;
    done.stats.prompt_tokens = 10;
    done.stats.generated_tokens = static_cast<int32_t>(script_.pieces.size());
    done.stats.finish_reason = script_.finish;
    out.kind = script_.kind;
    out.error = script_.error;
    if (out.refused()) done.text.clear();
    return Record(std::move(r), std::move(out));
  }
  sched::RunOutcome Record(sched::RunRequest r, sched::RunOutcome out) {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(std::move(r));
    return out;
  }
  const Script script_;
  mutable std::mutex mu_;
  std::vector<sched::RunRequest> requests_;
};

GenerationRequest Chat(bool stream, uint32_t n = 1) {
  GenerationRequest r;
  r.messages = {{"user", "hi"}};
  r.stream = stream;
  r.n = n;
  return r;
}

Script Structured() {
  Script s;
  s.pieces = {"<think>hm", "m</think>Hel", "lo <tool_", R"(call>{"city":"Pa)", R"(ris"}</tool_call>)"};
  s.parser = std::make_shared<const ToyReplyParser>();
  return s;
}

// The JSON of each SSE "data:" line (OpenAI chunks), [DONE] as the string "[DONE]".
std::vector<json> DataLines(const std::string& body) {
  std::vector<json> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    at = end;
  }
  return out;
}

// The names of the SSE events ("event: NAME"), in order.
std::vector<std::string> EventNames(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = body.find("event: ", at)) != std::string::npos) {
    const size_t end = body.find('\n', at);
    out.push_back(body.substr(at + 7, end - at - 7));
    at = end;
  }
  return out;
}

std::vector<json> NdjsonLines(const std::string& body) {
  std::vector<json> out;
  size_t at = 0, end = 0;
  while ((end = body.find('\n', at)) != std::string::npos) {
    out.push_back(json::parse(body.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

OpenAiReplyContext OpenAiContext(bool stream, uint32_t n = 1) {
  OpenAiReplyContext c;
  c.id = "chatcmpl-1";
  c.model = "m";
  c.stream = stream;
  c.n = n;
  return c;
}

OllamaClock FixedClock() {
  return {[] { return std::string("t"); }, [] { return int64_t{99}; }};
}

// --- the exchange's own decisions

TEST(Exchange, TheJobCarriesTheRequestAndTheServersCaps) {
  ScriptedEnv s(Script{{"Hi"}});
  RecordingResponder out;
  OpenAiSink sink(out, OpenAiContext(false));
  GenerationRequest r = Chat(false);
  r.max_tokens = 1u << 30;
  r.model = "m";
  EXPECT_EQ(RunExchange(r, {"openai", "call_"}, sink, s.env), 200);
  const auto runs = s.requests();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].api, "openai");
  EXPECT_EQ(runs[0].model, "m");
  EXPECT_EQ(runs[0].job.options.max_tokens, static_cast<int32_t>(s.env.config->max_new_tokens));
  EXPECT_TRUE(runs[0].half_close_is_gone);
  EXPECT_FALSE(runs[0].guard);
}

TEST(Exchange, TheClassComesFromTheBodyOrTheHeaderAndStaysUnderThePeersCeiling) {
  ScriptedEnv s(Script{{"Hi"}});
  auto c = std::make_shared<config::DaemonConfig>(*s.env.config);
  c->request_classes = {{.uid = 1001, .default_class = RequestClass::kNormal, .ceiling = RequestClass::kInteractive}};
  s.env.config = c;
  RecordingResponder out;
  OpenAiSink sink(out, OpenAiContext(false));
  // The configured peer asks for interactive in the header; another peer asks the same.
  s.env.peer = {1001, 1001};
  s.env.class_header = "interactive";
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, sink, s.env), 200);
  s.env.peer = {2002, 2002};
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, sink, s.env), 200);
  // The body's field wins over the header.
  GenerationRequest lowered = Chat(false);
  lowered.request_class = RequestClass::kBackground;
  EXPECT_EQ(RunExchange(lowered, {"openai", "call_"}, sink, s.env), 200);
  const auto runs = s.requests();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].job.request_class, RequestClass::kInteractive);
  EXPECT_EQ(runs[0].job.peer_uid, 1001u);
  EXPECT_EQ(runs[1].job.request_class, RequestClass::kNormal);  // above its ceiling
  EXPECT_EQ(runs[2].job.request_class, RequestClass::kBackground);

  s.env.class_header = "urgent";
  RecordingResponder refused;
  OpenAiSink refused_sink(refused, OpenAiContext(false));
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, refused_sink, s.env), 400);
  EXPECT_EQ(s.requests().size(), 3u);
}

TEST(Exchange, TheOverflowComesFromTheBodyOrTheHeaderOnEveryApi) {
  ScriptedEnv s(Script{{"Hi"}});
  RecordingResponder out;
  OpenAiSink sink(out, OpenAiContext(false));
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, sink, s.env), 200);  // neither: refused when too long
  s.env.overflow_header = "drop_oldest";
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, sink, s.env), 200);
  GenerationRequest refusing = Chat(false);  // truncation:"disabled", truncate:false
  refusing.overflow = engine::ContextOverflow::kError;
  EXPECT_EQ(RunExchange(refusing, {"openai", "call_"}, sink, s.env), 200);
  const auto runs = s.requests();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].job.overflow, engine::ContextOverflow::kError);
  EXPECT_EQ(runs[1].job.overflow, engine::ContextOverflow::kDropOldest);
  EXPECT_EQ(runs[2].job.overflow, engine::ContextOverflow::kError);

  // A bad header: the same words on every API, before any run.
  s.env.overflow_header = "sometimes";
  const std::string says = "header X-Llmd-Overflow must be error or drop_oldest (got 'sometimes')";
  RecordingResponder openai, anthropic, ollama;
  OpenAiSink openai_sink(openai, OpenAiContext(false));
  AnthropicSink anthropic_sink(anthropic, {"msg_1", "m", false}, false);
  OllamaSink ollama_sink(ollama, {true, "m", "t"}, false, FixedClock());
  EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, openai_sink, s.env), 400);
  EXPECT_EQ(RunExchange(Chat(false), {"anthropic", "toolu_"}, anthropic_sink, s.env), 400);
  EXPECT_EQ(RunExchange(Chat(false), {"ollama", "call_"}, ollama_sink, s.env), 400);
  EXPECT_EQ(json::parse(openai.body())["error"]["message"], says);
  EXPECT_EQ(json::parse(anthropic.body())["error"]["message"], says);
  EXPECT_EQ(json::parse(ollama.body())["error"], says);
  EXPECT_EQ(s.requests().size(), 3u);
}

TEST(Exchange, AnEmbeddingModelOrBadSamplingIsRefusedBeforeAnyRun) {
  ScriptedEnv s(Script{{"Hi"}});
  {
    RecordingResponder out;
    OllamaSink sink(out, {true, "embedder", "t"}, false, FixedClock());
    GenerationRequest r = Chat(false);
    r.model = "embedder";
    EXPECT_EQ(RunExchange(r, {"ollama", "call_"}, sink, s.env), 400);
    EXPECT_NE(json::parse(out.body())["error"].get<std::string>().find("loaded for embeddings"), std::string::npos);
  }
  {
    RecordingResponder out;
    AnthropicSink sink(out, {"msg_1", "m", false}, false);
    GenerationRequest r = Chat(false);
    r.top_p = 7.0f;
    EXPECT_EQ(RunExchange(r, {"anthropic", "toolu_"}, sink, s.env), 400);
    EXPECT_EQ(json::parse(out.body())["type"], "error");  // Anthropic's shape
  }
  EXPECT_TRUE(s.requests().empty());
}

TEST(Exchange, AClientGoneAnswersNothing) {
  Script script;
  script.pieces = {"a", "b", "c"};
  ScriptedEnv s(script);
  RecordingResponder out;
  out.StopReadingAfterFirstChunk();
  OllamaSink sink(out, {true, "m", "t"}, true, FixedClock());
  EXPECT_EQ(RunExchange(Chat(true), {"ollama", "call_"}, sink, s.env), 0);
  EXPECT_FALSE(out.ended());
}

TEST(Exchange, AnErrorBeforeTheStreamIsAnHttpErrorInTheApisShape) {
  Script script;
  script.kind = sched::RunOutcome::Kind::kError;
  script.error = InvalidArgumentError("the prompt is too long");
  ScriptedEnv s(script);
  RecordingResponder openai, ollama;
  OpenAiSink openai_sink(openai, OpenAiContext(true));
  OllamaSink ollama_sink(ollama, {true, "m", "t"}, true, FixedClock());
  EXPECT_EQ(RunExchange(Chat(true), {"openai", "call_"}, openai_sink, s.env), 400);
  EXPECT_EQ(json::parse(openai.body())["error"]["message"], "the prompt is too long");
  EXPECT_EQ(RunExchange(Chat(true), {"ollama", "call_"}, ollama_sink, s.env), 400);
  EXPECT_EQ(json::parse(ollama.body()), json({{"error", "the prompt is too long"}}));
}

TEST(Exchange, AnErrorAfterTheStreamBeganGoesInTheStream) {
  Script script;
  script.pieces = {"Hel"};
  script.kind = sched::RunOutcome::Kind::kError;
  script.error = InternalError("the engine failed");
  ScriptedEnv s(script);
  {
    RecordingResponder out;
    OpenAiSink sink(out, OpenAiContext(true));
    EXPECT_EQ(RunExchange(Chat(true), {"openai", "call_"}, sink, s.env), 500);
    EXPECT_EQ(out.status(), 200);
    const auto lines = DataLines(out.body());
    ASSERT_GE(lines.size(), 3u);
    EXPECT_EQ(lines[lines.size() - 2]["error"]["message"], "the engine failed");
    EXPECT_EQ(lines.back(), "[DONE]");
  }
  {
    RecordingResponder out;
    ResponsesSink sink(out, {"resp_1", 1, "m", "{}"}, true);
    EXPECT_EQ(RunExchange(Chat(true), {"responses", "call_"}, sink, s.env), 500);
    const auto names = EventNames(out.body());
    ASSERT_GE(names.size(), 2u);
    EXPECT_EQ(names[names.size() - 2], "error");
    EXPECT_EQ(names.back(), "response.failed");
  }
  {
    RecordingResponder out;
    AnthropicSink sink(out, {"msg_1", "m", false}, true);
    EXPECT_EQ(RunExchange(Chat(true), {"anthropic", "toolu_"}, sink, s.env), 500);
    EXPECT_EQ(EventNames(out.body()).back(), "error");
  }
  {
    RecordingResponder out;
    OllamaSink sink(out, {true, "m", "t"}, true, FixedClock());
    EXPECT_EQ(RunExchange(Chat(true), {"ollama", "call_"}, sink, s.env), 500);
    const auto lines = NdjsonLines(out.body());
    EXPECT_EQ(lines.back(), json({{"error", "the engine failed"}}));
    EXPECT_TRUE(out.ended());
  }
}

TEST(Exchange, AGuardRefusalIsAnEmptyAnswerEachApiNamesItsWay) {
  Script script;
  script.pieces = {"unsafe"};
  script.kind = sched::RunOutcome::Kind::kError;
  script.error = InvalidArgumentError("the guard said no").WithReason(ErrorReason::kRefusedByGuard);
  ScriptedEnv s(script);
  {
    RecordingResponder out;
    OpenAiSink sink(out, OpenAiContext(false));
    EXPECT_EQ(RunExchange(Chat(false), {"openai", "call_"}, sink, s.env), 200);
    const json j = json::parse(out.body());
    EXPECT_EQ(j["choices"][0]["finish_reason"], "content_filter");
    EXPECT_EQ(j["choices"][0]["message"]["content"], "");
  }
  {
    RecordingResponder out;
    AnthropicSink sink(out, {"msg_1", "m", false}, false);
    EXPECT_EQ(RunExchange(Chat(false), {"anthropic", "toolu_"}, sink, s.env), 200);
    const json j = json::parse(out.body());
    EXPECT_EQ(j["stop_reason"], "refusal");
  }
  {
    RecordingResponder out;
    ResponsesSink sink(out, {"resp_1", 1, "m", "{}"}, false);
    EXPECT_EQ(RunExchange(Chat(false), {"responses", "call_"}, sink, s.env), 200);
    const json j = json::parse(out.body());
    EXPECT_EQ(j["status"], "incomplete");
    EXPECT_EQ(j["incomplete_details"]["reason"], "content_filter");
  }
  {
    RecordingResponder out;
    OllamaSink sink(out, {true, "m", "t"}, false, FixedClock());
    EXPECT_EQ(RunExchange(Chat(false), {"ollama", "call_"}, sink, s.env), 200);
    EXPECT_EQ(json::parse(out.body())["done_reason"], "content_filter");
  }
}

// --- each API's stream of reasoning, text and a tool call

TEST(Exchange, OpenAiStreamsRoleThenDeltasThenTheCallThenTheFinish) {
  ScriptedEnv s(Structured());
  RecordingResponder out;
  OpenAiSink sink(out, OpenAiContext(true));
  EXPECT_EQ(RunExchange(Chat(true), {"openai", "call_"}, sink, s.env), 200);
  const auto lines = DataLines(out.body());
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0]["choices"][0]["delta"]["role"], "assistant");
  std::string reasoning, content, arguments, finish;
  for (const json& l : lines) {
    if (l == "[DONE]") continue;
    const json& c = l["choices"][0];
    const json& d = c["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (d.contains("tool_calls")) {
      EXPECT_TRUE(reasoning == "hmm" && content == "Hello ") << "the call comes after the text";
      arguments += d["tool_calls"][0]["function"]["arguments"].get<std::string>();
      if (d["tool_calls"][0].contains("id")) {
        EXPECT_TRUE(d["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
      }
    }
    if (c["finish_reason"].is_string()) finish = c["finish_reason"];
  }
  EXPECT_EQ(reasoning, "hmm");
  EXPECT_EQ(content, "Hello ");
  EXPECT_EQ(json::parse(arguments), json({{"city", "Paris"}}));
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(lines.back(), "[DONE]");
}

TEST(Exchange, AnthropicStreamsThinkingTextThenToolUseBlocks) {
  ScriptedEnv s(Structured());
  RecordingResponder out;
  AnthropicSink sink(out, {"msg_1", "m", false}, true);
  EXPECT_EQ(RunExchange(Chat(true), {"anthropic", "toolu_"}, sink, s.env), 200);
  const std::string& body = out.body();
  const size_t thinking = body.find("\"thinking_delta\""), text = body.find("\"text_delta\""),
               tool = body.find("\"tool_use\""), stop = body.find("\"tool_use\"", body.find("message_delta"));
  ASSERT_NE(thinking, std::string::npos);
  ASSERT_NE(text, std::string::npos);
  ASSERT_NE(tool, std::string::npos);
  EXPECT_LT(thinking, text);
  EXPECT_LT(text, tool);
  EXPECT_NE(stop, std::string::npos) << "stop_reason tool_use";
  EXPECT_NE(body.find("toolu_"), std::string::npos);
  const auto names = EventNames(body);
  EXPECT_EQ(names.front(), "message_start");
  EXPECT_EQ(names.back(), "message_stop");
}

TEST(Exchange, ResponsesStreamsReasoningMessageThenFunctionCallItems) {
  ScriptedEnv s(Structured());
  RecordingResponder out;
  ResponsesSink sink(out, {"resp_1", 1, "m", "{}"}, true);
  EXPECT_EQ(RunExchange(Chat(true), {"responses", "call_"}, sink, s.env), 200);
  const std::string& body = out.body();
  const size_t reasoning = body.find("response.reasoning"), text = body.find("response.output_text.delta"),
               call = body.find("response.function_call_arguments.delta");
  ASSERT_NE(reasoning, std::string::npos);
  ASSERT_NE(text, std::string::npos);
  ASSERT_NE(call, std::string::npos);
  EXPECT_LT(reasoning, text);
  EXPECT_LT(text, call);
  const auto names = EventNames(body);
  EXPECT_EQ(names.front(), "response.created");
  EXPECT_EQ(names.back(), "response.completed");
}

TEST(Exchange, OllamaStreamsTextAsItComesAndToolCallsWholeAtTheEnd) {
  ScriptedEnv s(Structured());
  RecordingResponder out;
  OllamaSink sink(out, {true, "m", "t0"}, true, FixedClock());
  EXPECT_EQ(RunExchange(Chat(true), {"ollama", "call_"}, sink, s.env), 200);
  const auto lines = NdjsonLines(out.body());
  ASSERT_EQ(lines.size(), 5u);  // three pieces of text, the held-back call, the end
  EXPECT_EQ(lines[0]["message"]["thinking"], "hm");
  EXPECT_EQ(lines[1]["message"]["thinking"], "m");
  EXPECT_EQ(lines[1]["message"]["content"], "Hel");
  EXPECT_EQ(lines[2]["message"]["content"], "lo ");
  EXPECT_EQ(lines[2]["logprobs"].size(), 1u);
  const json& calls = lines[3]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["function"]["arguments"], json({{"city", "Paris"}}));
  EXPECT_EQ(lines[3]["logprobs"].size(), 2u) << "those of the pieces that sent no line";
  EXPECT_EQ(lines[4]["done"], true);
  EXPECT_EQ(lines[4]["done_reason"], "stop");
  EXPECT_EQ(lines[4]["total_duration"], 99);
  EXPECT_TRUE(out.ended());

  // The same reply whole: one object with everything.
  RecordingResponder whole;
  OllamaSink whole_sink(whole, {true, "m", "t0"}, false, FixedClock());
  EXPECT_EQ(RunExchange(Chat(false), {"ollama", "call_"}, whole_sink, s.env), 200);
  const json one = json::parse(whole.body());
  EXPECT_EQ(one["message"]["content"], "Hello ");
  EXPECT_EQ(one["message"]["thinking"], "hmm");
  EXPECT_EQ(one["message"]["tool_calls"][0]["function"]["arguments"]["city"], "Paris");
}

// --- n

TEST(Exchange, NChoicesRunOnServerThreadsEachWithItsSeed) {
  Script script;
  script.pieces = {"a", "b"};
  ScriptedEnv s(script);
  RecordingResponder out;
  OpenAiSink sink(out, OpenAiContext(false, 3));
  GenerationRequest r = Chat(false, 3);
  r.seed = 100;
  EXPECT_EQ(RunExchange(r, {"openai", "call_"}, sink, s.env), 200);
  EXPECT_EQ(out.threads_started(), 0u) << "no start_thread: every choice on the caller's thread";

  RecordingResponder out2;
  s.env.start_thread = [&out2](const std::function<void()>& task) { return out2.StartThread(task); };
  OpenAiSink sink2(out2, OpenAiContext(false, 3));
  EXPECT_EQ(RunExchange(r, {"openai", "call_"}, sink2, s.env), 200);
  EXPECT_EQ(out2.threads_started(), 2u) << "the first choice runs on the request's own thread";
  const json j = json::parse(out2.body());
  ASSERT_EQ(j["choices"].size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(j["choices"][i]["index"], i);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 10) << "the prompt is counted once";
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  std::vector<uint32_t> seeds;
  for (const auto& run : s.requests()) seeds.push_back(run.job.options.sampling.seed);
  std::sort(seeds.begin(), seeds.end());
  EXPECT_EQ(seeds, (std::vector<uint32_t>{100, 100, 101, 101, 102, 102}));
}

TEST(Exchange, NChoicesWithoutFreeThreadsRunOnTheRequestsOwn) {
  Script script;
  script.pieces = {"x"};
  ScriptedEnv s(script);
  RecordingResponder out(/*threads=*/false);
  s.env.start_thread = [&out](const std::function<void()>& task) { return out.StartThread(task); };
  OpenAiSink sink(out, OpenAiContext(true, 2));
  EXPECT_EQ(RunExchange(Chat(true, 2), {"openai", "call_"}, sink, s.env), 200);
  const auto lines = DataLines(out.body());
  std::vector<int> finished;
  for (const json& l : lines) {
    if (l != "[DONE]" && l["choices"][0]["finish_reason"].is_string()) finished.push_back(l["choices"][0]["index"]);
  }
  EXPECT_EQ(finished, (std::vector<int>{0, 1}));
  EXPECT_EQ(s.requests().size(), 2u);
}

TEST(Exchange, CountTokensGeneratesNothing) {
  ScriptedEnv s(Script{{"ignored"}});
  RecordingResponder out;
  TokenCountSink sink(out);
  EXPECT_EQ(RunExchange(Chat(true), {"anthropic", "toolu_", false, /*count_only=*/true}, sink, s.env), 200);
  EXPECT_EQ(json::parse(out.body()), json({{"input_tokens", 10}}));
  const auto runs = s.requests();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].job.count_only);
  EXPECT_FALSE(runs[0].job.stream);
}

}  // namespace
}  // namespace llmd::http
