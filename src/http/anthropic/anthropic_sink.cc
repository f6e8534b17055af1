#include "http/anthropic/anthropic_sink.h"

#include <utility>

#include "http/json_reply.h"

namespace llmd::http {

AnthropicSink::AnthropicSink(Responder& out, MessageContext context, bool stream)
    : out_(out), sse_(out), ctx_(context), stream_(stream), events_(std::move(context)) {}

bool AnthropicSink::Write(const std::vector<SseEvent>& events) {
  if (!streaming_) {
    streaming_ = true;
    stream_ok_ = sse_.Begin();
  }
  for (const SseEvent& e : events) {
    if (!stream_ok_) break;
    stream_ok_ = sse_.Event(e.event, e.data);
  }
  return stream_ok_;
}

bool AnthropicSink::Piece(const ReplyPiece& piece) { return Write(events_.Next(piece.delta)); }

int AnthropicSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  MessageEnd message_end = MessageEndFor(reply.completion.stats, reply.final.tool_calls, end.max_tokens,
                                         reply.refused, std::move(reply.stop_sequence));
  if (reply.refused) message_end.refusal_explanation = reply.refusal;
  if (!stream_) return out_.Send(200, kJsonType, RenderMessage(ctx_, reply.final.reply, message_end)) ? 200 : 0;
  if (!Write(events_.Finish(reply.final.reply, message_end))) return 0;
  return sse_.End() ? 200 : 0;
}

int AnthropicSink::Fail(const ApiError& e) {
  if (!streaming_) return SendError(out_, e, AnthropicErrorBody);
  Write(events_.Fail(e));
  sse_.End();
  return e.status;
}

int TokenCountSink::Finish(ExchangeEnd& end) {
  return out_.Send(200, kJsonType, RenderTokenCount(end.usage.prompt_tokens)) ? 200 : 0;
}

int TokenCountSink::Fail(const ApiError& e) { return SendError(out_, e, AnthropicErrorBody); }

}  // namespace llmd::http
