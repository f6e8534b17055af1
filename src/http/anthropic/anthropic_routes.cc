#include "http/anthropic/anthropic_routes.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "http/generation.h"
#include "http/json_reply.h"
#include "http/api_error.h"
#include "http/reply_deltas.h"
#include "http/sse_writer.h"
#include "sched/request_runner.h"

namespace llmd::http {
namespace {

int Fail(Responder& out, const ApiError& e) { return SendError(out, e, ErrorShape::kAnthropic); }

// The base of every job here: the front end's name, the peer watched for a hang-up, the
// configured deadline.
sched::RunRequest BaseRun(const GenerationRequest& r, Responder& out, const config::DaemonConfig& c) {
  sched::RunRequest run;
  run.api = "anthropic";
  run.model = r.model;
  run.peer_fd = out.fd();
  run.half_close_is_gone = true;
  run.timeout_ms = c.request_timeout_ms;
  return run;
}

}  // namespace

AnthropicRoutes::AnthropicRoutes(sched::ServerState& ctx, const ApiOptions& /*options*/) : ctx_(ctx) {}

int AnthropicRoutes::Handle(const Request& req, Responder& out) {
  const bool messages = req.path == "/v1/messages", count = req.path == "/v1/messages/count_tokens";
  if (!messages && !count) return Fail(out, {404, "not_found_error", "not_found", "no such endpoint: " + req.path, {}});
  if (req.method != "POST") {
    return Fail(out, {405, "invalid_request_error", "method_not_allowed",
                      req.method + " is not allowed on " + req.path + "; use POST", {{"Allow", "POST"}}});
  }
  auto parsed = ParseAnthropicRequest(req.body, count ? AnthropicBody::kCountTokens : AnthropicBody::kMessages);
  if (!parsed.has_value()) return Fail(out, ApiErrorOf(parsed.error()));
  return count ? CountTokens(out, *parsed) : Messages(req, out, *parsed);
}

int AnthropicRoutes::Messages(const Request& req, Responder& out, AnthropicRequest& r) {
  const auto config = ctx_.config();
  const config::DaemonConfig& c = *config;
  if (c.log_text) Log(LogLevel::kDebug, "http_request", {{"body", req.body}});
  const MessageContext message{NewId("msg_"), r.model.value_or(""), r.omit_thinking};
  const std::vector<std::string> stops = r.stop;
  const bool stream = r.stream;
  sched::RunRequest run = BaseRun(r, out, c);
  // With the guard cascade on, the answer is generated whole and shown only after the guard
  // model's verdict; a refusal is an empty answer with stop_reason "refusal".
  run.guard = !c.guard_model.empty();
  run.guarded_prompt = GuardedPrompt(r);
  run.job = MakeGenerationJob(r, c);
  if (Status s = run.job.options.sampling.Validate(); !s.ok()) return Fail(out, ApiErrorOf(s));
  const int32_t max_tokens = run.job.options.max_tokens;

  ReplyDeltas deltas([] { return NewId("toolu_"); });
  AnthropicStream events(message);
  SseWriter sse(out);
  bool streaming = false;  // the 200 head is out: errors now go in the stream
  bool stream_ok = true;
  auto write = [&](const std::vector<SseEvent>& list) {
    if (!streaming) {
      streaming = true;
      stream_ok = sse.Begin();
    }
    for (const SseEvent& e : list) {
      if (!stream_ok) break;
      stream_ok = sse.Event(e.event, e.data);
    }
    return stream_ok;
  };
  // The text of a structured reply goes out as the parser's deltas; plain text as it comes.
  // The first event begins the stream (message_start), even when the parse holds it back.
  std::string text;
  std::shared_ptr<const engine::ReplyParser> parser;
  if (stream) {
    run.on_text = [&](const sched::JobEvent& ev) {
      text += ev.text;
      if (ev.parser) parser = ev.parser;
      ReplyDelta delta;
      if (parser) delta = deltas.Next(parser->Parse(text, /*partial=*/true));
      else delta.content = ev.text;
      return write(events.Next(delta));
    };
  }

  sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  if (outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  if (outcome.kind == sched::RunOutcome::Kind::kError && !outcome.refused()) {
    const ApiError e = ApiErrorOf(outcome.error);
    if (!streaming) return Fail(out, e);
    write(events.Fail(e));
    sse.End();
    return e.status;
  }
  const engine::Completion& done = outcome.completion;
  FinalReply reply = ParseFinalReply(done, deltas);
  // Which stop sequence ended the reply: the completion's text has it cut, its tokens do not.
  std::optional<std::string> matched;
  sched::EngineWorker* worker = ctx_.WorkerFor(r.model);
  if (!outcome.refused() && done.stats.finish_reason == engine::FinishReason::kStop && !stops.empty() &&
      !done.tokens.empty() && worker != nullptr) {
    auto all = worker->Detokenize(done.tokens, /*render_special=*/false);
    auto last = worker->Detokenize({done.tokens.back()}, /*render_special=*/false);
    if (all.has_value() && last.has_value()) matched = MatchedStopSequence(stops, *all, last->size());
  }
  MessageEnd end = MessageEndFor(done.stats, reply.tool_calls, max_tokens, outcome.refused(), std::move(matched));
  if (outcome.refused()) end.refusal_explanation = outcome.error.message();
  if (!stream) return out.Send(200, kJsonType, RenderMessage(message, reply.reply, end)) ? 200 : 0;
  if (!write(events.Finish(reply.reply, end))) return 0;
  return sse.End() ? 200 : 0;
}

// The prompt as the model would see it (template, tools, the configured system prompt),
// counted by the worker that would run it (a count-only job: nothing is decoded).
int AnthropicRoutes::CountTokens(Responder& out, AnthropicRequest& r) {
  const auto config = ctx_.config();
  r.stream = false;
  sched::RunRequest run = BaseRun(r, out, *config);
  run.job = MakeGenerationJob(r, *config);
  run.job.count_only = true;
  sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  if (outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  if (outcome.kind == sched::RunOutcome::Kind::kError) return Fail(out, ApiErrorOf(outcome.error));
  return out.Send(200, kJsonType, RenderTokenCount(outcome.completion.stats.prompt_tokens)) ? 200 : 0;
}

}  // namespace llmd::http
