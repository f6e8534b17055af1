// ResponsesSink: the wire side of /v1/responses: the Response object, or its SSE events
// (ResponsesStream: response.created, the output items' events, response.completed or
// response.incomplete). An error after the stream began is an "error" event and
// response.failed. A reply the guard refused is "incomplete" (content_filter).
//
// Thread-safety: as ReplySink.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_

#include "http/exchange.h"
#include "http/reply_stream_sink.h"
#include "http/responses/responses_api.h"

namespace llmd::http {

// The opening events go out with the first piece (ResponsesStream::Next adds them).
class ResponsesSink final : public ReplyStreamSink<ResponsesStream, ResponseContext> {
 public:
  using ReplyStreamSink::ReplyStreamSink;

  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
