#include "http/responses/responses_sink.h"

#include <utility>
#include <vector>

#include "http/json_reply.h"
#include "http/openai/openai_render.h"

namespace llmd::http {

void ResponsesSink::Keep(const std::string& response) const {
  if (storage_.keep) storage_.keep(response);
}

int ResponsesSink::Sent(bool sent) const {
  if (!sent && storage_.drop) storage_.drop();
  return sent ? 200 : 0;
}

int ResponsesSink::Finish(ExchangeEnd& end) {
  ChoiceEnd& reply = end.choices.front();
  const engine::GenerationStats& stats = reply.completion.stats;
  const std::string_view status = reply.refused ? "incomplete" : ResponseStatusFor(stats);
  if (!stream_) {
    const std::string response = RenderResponse(ctx_, reply.final.reply, stats, status, reply.completion.logprobs);
    Keep(response);
    return Sent(out_.Send(200, kJsonType, response));
  }
  std::vector<SseEvent> last = events_.Finish(reply.final.reply, stats, status, reply.completion.logprobs);
  // What is stored is the object a non-streamed request gets: RenderResponse of the final reply.
  if (storage_.keep) Keep(RenderResponse(ctx_, reply.final.reply, stats, status, reply.completion.logprobs));
  return Sent(writer_.Write(last) && writer_.End());
}

int ResponsesSink::Fail(const ApiError& e) {
  if (!writer_.started()) return SendError(out_, e, OpenAiErrorBody);
  writer_.Write(events_.Fail(e.code, e.message));
  writer_.End();
  return e.status;
}

}  // namespace llmd::http
