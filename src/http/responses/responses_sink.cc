#include "http/responses/responses_sink.h"

#include <utility>

#include "http/json_reply.h"
#include "http/openai/openai_render.h"

namespace llmd::http {

ResponsesSink::ResponsesSink(Responder& out, ResponseContext context, bool stream)
    : out_(out), sse_(out), ctx_(context), stream_(stream), events_(std::move(context)) {}

bool ResponsesSink::Send(const std::vector<SseEvent>& events) {
  for (const SseEvent& e : events) {
    if (!sse_.Event(e.event, e.data)) return false;
  }
  return true;
}

bool ResponsesSink::Begin() {
  if (streaming_) return true;
  streaming_ = true;
  return sse_.Begin() && Send(events_.Begin());
}

bool ResponsesSink::Piece(const ReplyPiece& piece) { return Begin() && Send(events_.Next(piece.delta)); }

int ResponsesSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  const engine::GenerationStats& stats = reply.completion.stats;
  const std::string_view status = reply.refused ? "incomplete" : ResponseStatusFor(stats);
  if (!stream_) {
    return out_.Send(200, kJsonType, RenderResponse(ctx_, reply.final.reply, stats, status, reply.completion.logprobs))
               ? 200
               : 0;
  }
  if (!Begin() || !Send(events_.Finish(reply.final.reply, stats, status, reply.completion.logprobs))) return 0;
  return sse_.End() ? 200 : 0;
}

int ResponsesSink::Fail(const ApiError& e) {
  if (!streaming_) return SendError(out_, e, OpenAiErrorBody);
  Send(events_.Fail(e.code, e.message));
  sse_.End();
  return e.status;
}

}  // namespace llmd::http
