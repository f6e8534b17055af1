#include "http/responses/responses_sink.h"

#include <utility>

#include "http/json_reply.h"
#include "http/openai/openai_render.h"

namespace llmd::http {

int ResponsesSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  const engine::GenerationStats& stats = reply.completion.stats;
  const std::string_view status = reply.refused ? "incomplete" : ResponseStatusFor(stats);
  if (!stream_) {
    return out_.Send(200, kJsonType, RenderResponse(ctx_, reply.final.reply, stats, status, reply.completion.logprobs))
               ? 200
               : 0;
  }
  if (!writer_.Write(events_.Finish(reply.final.reply, stats, status, reply.completion.logprobs))) return 0;
  return writer_.End() ? 200 : 0;
}

int ResponsesSink::Fail(const ApiError& e) {
  if (!writer_.started()) return SendError(out_, e, OpenAiErrorBody);
  writer_.Write(events_.Fail(e.code, e.message));
  writer_.End();
  return e.status;
}

}  // namespace llmd::http
