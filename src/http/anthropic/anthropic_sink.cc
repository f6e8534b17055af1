#include "http/anthropic/anthropic_sink.h"

#include <utility>

#include "http/json_reply.h"

namespace llmd::http {

int AnthropicSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  MessageEnd message_end = MessageEndFor(reply.completion.stats, reply.final.tool_calls, end.max_tokens,
                                         reply.refused, std::move(reply.stop_sequence));
  if (reply.refused) message_end.refusal_explanation = reply.refusal;
  if (!stream_) return out_.Send(200, kJsonType, RenderMessage(ctx_, reply.final.reply, message_end)) ? 200 : 0;
  if (!writer_.Write(events_.Finish(reply.final.reply, message_end))) return 0;
  return writer_.End() ? 200 : 0;
}

int AnthropicSink::Fail(const ApiError& e) {
  if (!writer_.started()) return SendError(out_, e, AnthropicErrorBody);
  writer_.Write(events_.Fail(e));
  writer_.End();
  return e.status;
}

int TokenCountSink::Finish(ExchangeEnd& end) {
  return out_.Send(200, kJsonType, RenderTokenCount(end.usage.prompt_tokens)) ? 200 : 0;
}

int TokenCountSink::Fail(const ApiError& e) { return SendError(out_, e, AnthropicErrorBody); }

}  // namespace llmd::http
