// ReplyStreamSink: what the sinks of APIs that stream typed blocks as named SSE events
// (Anthropic Messages, Responses) share: the API's event stream (`Events`, a ReplyStream such as
// AnthropicStream or ResponsesStream, made from its `Context`), the writer that begins the SSE
// stream with the first piece, and Piece itself. Each API's sink adds its Finish and Fail.
#ifndef LLMD_HTTP_REPLY_STREAM_SINK_H_
#define LLMD_HTTP_REPLY_STREAM_SINK_H_

#include <utility>

#include "http/exchange.h"
#include "http/sse_writer.h"

namespace llmd::http {

template <typename Events, typename Context>
class ReplyStreamSink : public ReplySink {
 public:
  // `stream`: the request asked for a stream (else the reply is one object).
  ReplyStreamSink(Responder& out, Context context, bool stream)
      : out_(out), writer_(out), ctx_(context), stream_(stream), events_(std::move(context)) {}

  bool Piece(const ReplyPiece& piece) override { return writer_.Write(events_.Next(piece.delta)); }

 protected:
  Responder& out_;
  SseEventWriter writer_;  // started(): the 200 head is out, errors now go in the stream
  const Context ctx_;
  const bool stream_;
  Events events_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_REPLY_STREAM_SINK_H_
