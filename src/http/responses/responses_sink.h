// ResponsesSink: the wire side of /v1/responses: the Response object, or its SSE events
// (ResponsesStream: response.created, the output items' events, response.completed or
// response.incomplete). An error after the stream began is an "error" event and
// response.failed. A reply the guard refused is "incomplete" (content_filter).
//
// Storing (store: true): the finished Response object is kept just before its last bytes go
// out, so that a GET right after the reply finds it, and taken back when they cannot be sent
// (the client left). An error, or a client gone before the end, stores nothing.
//
// Thread-safety: as ReplySink.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_

#include <functional>
#include <string>
#include <utility>

#include "http/exchange.h"
#include "http/reply_stream_sink.h"
#include "http/responses/responses_api.h"

namespace llmd::http {

// The opening events go out with the first piece (ResponsesStream::Next adds them).
class ResponsesSink final : public ReplyStreamSink<ResponsesStream, ResponseContext> {
 public:
  struct Storage {
    std::function<void(const std::string& response_json)> keep;  // the object, as RenderResponse writes it
    std::function<void()> drop;                                   // the client did not get it all
  };

  // No `storage`: nothing is kept.
  ResponsesSink(Responder& out, ResponseContext context, bool stream, Storage storage = {})
      : ReplyStreamSink(out, std::move(context), stream), storage_(std::move(storage)) {}

  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;

 private:
  // Keeps `response` when storing.
  void Keep(const std::string& response) const;
  // The status of a reply whose last write returned `sent`; what was kept is dropped when false.
  int Sent(bool sent) const;

  const Storage storage_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_SINK_H_
