// OpenAiSink: the wire side of /v1/chat/completions and /v1/completions. One JSON object, or
// an SSE stream of chunks: chat's first chunk per choice says the role; then each piece as a
// delta (chat: content, reasoning_content, tool-call fragments; completions: text), with its
// log-probabilities when asked; per choice a last chunk with the finish reason (what the
// partial parses held back goes out before it); the usage chunk when
// stream_options.include_usage; then [DONE]. An error after the stream began is a chunk
// {"error":{...}} and [DONE].
//
// Finish reasons: "tool_calls" for a reply of calls, "length" when the token limit or the
// context cut it, "content_filter" for the guard's refusal (its text empty), else "stop".
//
// Thread-safety: as ReplySink (RunExchange serialises Piece).
#ifndef LLMD_HTTP_OPENAI_OPENAI_SINK_H_
#define LLMD_HTTP_OPENAI_OPENAI_SINK_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "http/sse_writer.h"

namespace llmd::http {

// What an OpenAI reply says about itself besides what was generated.
struct OpenAiReplyContext {
  bool chat = true;            // chat.completion(.chunk), else text_completion
  std::string id;              // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;         // Unix seconds
  std::string model;           // the model that answered
  uint32_t n = 1;              // choices
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool logprobs = false;       // the request asked for log-probabilities
};

class OpenAiSink final : public ReplySink {
 public:
  OpenAiSink(Responder& out, OpenAiReplyContext context);

  bool Piece(const ReplyPiece& piece) override;
  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;

 private:
  nlohmann::json Envelope(nlohmann::json choices) const;
  // A stream chunk of one choice: its delta (chat) or text (completions).
  nlohmann::json Chunk(uint32_t choice, nlohmann::json delta_or_text, nlohmann::json logprobs,
                       const char* finish) const;
  nlohmann::json Logprobs(uint32_t choice, const std::vector<engine::TokenLogprob>& tokens);
  const char* FinishReason(const ChoiceEnd& choice) const;
  bool BeginStream();  // the 200 head and, for chat, each choice's role chunk
  bool Send(const nlohmann::json& chunk);
  int FinishStream(ExchangeEnd& end);

  Responder& out_;
  SseWriter sse_;
  const OpenAiReplyContext ctx_;
  std::vector<size_t> text_bytes_;  // completions, per choice: the offset of the next logprobs
  bool streaming_ = false;          // the 200 head is out: errors now go in the stream
  bool stream_ok_ = true;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_OPENAI_SINK_H_
