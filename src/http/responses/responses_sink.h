// ResponsesSink: the wire side of /v1/responses: the Response object, or its SSE events
// (ResponsesStream: response.created, the output items' events, response.completed or
// response.incomplete). An error after the stream began is an "error" event and
// response.failed. A reply the guard refused is "incomplete" (content_filter).
//
// Thread-safety: as ReplySink.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_

#include "http/exchange.h"
#include "http/responses/responses_api.h"
#include "http/sse_writer.h"

namespace llmd::http {

class ResponsesSink final : public ReplySink {
 public:
  ResponsesSink(Responder& out, ResponseContext context, bool stream);

  bool Piece(const ReplyPiece& piece) override;
  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;

 private:
  Responder& out_;
  SseEventWriter writer_;
  const ResponseContext ctx_;
  const bool stream_;
  ResponsesStream events_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
