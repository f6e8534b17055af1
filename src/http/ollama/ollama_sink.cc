#include "http/ollama/ollama_sink.h"

#include <chrono>
#include <utility>

#include "http/json_reply.h"

namespace llmd::http {

using nlohmann::json;

OllamaClock OllamaClock::Started() {
  const auto started = std::chrono::steady_clock::now();
  return {[] { return Rfc3339Nanos(std::chrono::system_clock::now()); },
          [started] {
            return static_cast<int64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
          }};
}

OllamaSink::OllamaSink(Responder& out, OllamaReplyContext context, bool stream, OllamaClock clock)
    : out_(out), ctx_(std::move(context)), stream_(stream), clock_(std::move(clock)) {}

bool OllamaSink::Write(const json& line) {
  if (!streaming_) {
    streaming_ = true;
    stream_ok_ = out_.BeginStream(200, "application/x-ndjson");
  }
  stream_ok_ = stream_ok_ && out_.WriteChunk(Dump(line) + "\n");
  return stream_ok_;  // false: the client left or stopped reading, and the job is cancelled
}

bool OllamaSink::Piece(const ReplyPiece& piece) {
  unsent_.insert(unsent_.end(), piece.logprobs.begin(), piece.logprobs.end());
  engine::ParsedReply text;  // the calls wait for the end
  text.content = piece.delta.content;
  text.reasoning_content = piece.delta.reasoning_content;
  if (text.content.empty() && text.reasoning_content.empty()) return stream_ok_;  // held back for now
  ctx_.created_at = clock_.now();
  json line = OllamaChunk(ctx_, text, unsent_);
  unsent_.clear();
  return Write(line);
}

int OllamaSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  const engine::Completion& done = reply.completion;
  ctx_.created_at = clock_.now();
  const std::string_view reason = OllamaDoneReason(done.stats, reply.refused);
  if (!stream_) {
    const json whole = OllamaFinal(ctx_, reply.final.reply, done.stats, clock_.elapsed_ns(), reason, done.logprobs);
    return out_.Send(200, kJsonType, Dump(whole)) ? 200 : 0;
  }
  engine::ParsedReply rest;
  rest.content = std::move(reply.rest.content);
  rest.reasoning_content = std::move(reply.rest.reasoning_content);
  rest.tool_calls = std::move(reply.final.reply.tool_calls);
  if (!rest.content.empty() || !rest.reasoning_content.empty() || !rest.tool_calls.empty()) {
    if (!Write(OllamaChunk(ctx_, rest, unsent_))) return 0;
    unsent_.clear();
  }
  if (!Write(OllamaFinal(ctx_, engine::ParsedReply{}, done.stats, clock_.elapsed_ns(), reason, unsent_))) return 0;
  return out_.EndStream() ? 200 : 0;
}

int OllamaSink::Fail(const ApiError& e) {
  if (!streaming_) return SendError(out_, e, OllamaErrorBody);
  if (!Write({{"error", e.message}}) || !out_.EndStream()) return 0;
  return e.status;
}

}  // namespace llmd::http
