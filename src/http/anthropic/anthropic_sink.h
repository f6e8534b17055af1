// AnthropicSink: the wire side of /v1/messages: the Message object, or its SSE events
// (AnthropicStream: message_start, the content blocks' events, message_delta, message_stop).
// The first piece begins the stream, even one a partial parse holds back. An error after the
// stream began is an "error" event. A reply the guard refused stops with "refusal" and the
// guard's words.
//
// Thread-safety: as ReplySink.
#ifndef LLMD_HTTP_ANTHROPIC_ANTHROPIC_SINK_H_
#define LLMD_HTTP_ANTHROPIC_ANTHROPIC_SINK_H_

#include "http/anthropic/anthropic_api.h"
#include "http/exchange.h"
#include "http/reply_stream_sink.h"

namespace llmd::http {

class AnthropicSink final : public ReplyStreamSink<AnthropicStream, MessageContext> {
 public:
  using ReplyStreamSink::ReplyStreamSink;

  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;
};

// count_tokens' answer: {"input_tokens": N}, the prompt's tokens.
class TokenCountSink final : public ReplySink {
 public:
  explicit TokenCountSink(Responder& out) : out_(out) {}
  bool Piece(const ReplyPiece& /*piece*/) override { return true; }  // nothing is generated
  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;

 private:
  Responder& out_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_ANTHROPIC_ANTHROPIC_SINK_H_
