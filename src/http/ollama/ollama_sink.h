// OllamaSink: the wire side of /api/chat and /api/generate: one object (stream:false), or
// NDJSON lines. A stream sends each piece of text as it comes (content and thinking; a
// structured reply's tool calls are held back and sent whole at the end, as Ollama sends
// each call once; log-probabilities of held-back text ride on the next line), then what the
// partial parses held back with the calls, then the done:true object with the numbers. The
// 200 head goes out with the first line, so an error found before any text is still an HTTP
// status; one after it is a last {"error":"..."} line.
//
// Thread-safety: as ReplySink.
#ifndef LLMD_HTTP_OLLAMA_OLLAMA_SINK_H_
#define LLMD_HTTP_OLLAMA_OLLAMA_SINK_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "http/ollama/ollama_api.h"

namespace llmd::http {

// The sink's clock: each line's created_at, and the reply's total_duration so far.
struct OllamaClock {
  std::function<std::string()> now;     // Rfc3339Nanos of the wall clock
  std::function<int64_t()> elapsed_ns;  // since the request arrived
  static OllamaClock Started();         // the real clocks, from this moment
};

class OllamaSink final : public ReplySink {
 public:
  OllamaSink(Responder& out, OllamaReplyContext context, bool stream, OllamaClock clock = OllamaClock::Started());

  bool Piece(const ReplyPiece& piece) override;
  int Finish(ExchangeEnd& end) override;
  int Fail(const ApiError& error) override;

 private:
  bool Write(const nlohmann::json& line);  // begins the stream first if not yet

  Responder& out_;
  OllamaReplyContext ctx_;
  const bool stream_;
  const OllamaClock clock_;
  std::vector<engine::TokenLogprob> unsent_;  // log-probabilities not yet on a line
  bool streaming_ = false;                    // the 200 head is out: errors now go in the stream
  bool stream_ok_ = true;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_OLLAMA_OLLAMA_SINK_H_
