// SseWriter: a Server-Sent Events stream over a Responder, as OpenAI streams completions:
// "data: <json>\n\n" per event and "data: [DONE]\n\n" at the end; or, for the Responses
// API, "event: <name>\ndata: <json>\n\n" per event and no [DONE].
//
// Not thread-safe. Lifetime: `responder` must outlive this.
#ifndef LLMD_HTTP_SSE_WRITER_H_
#define LLMD_HTTP_SSE_WRITER_H_

#include <string>
#include <string_view>
#include <vector>

#include "http/http_server.h"

namespace llmd::http {

// One server-sent event: "event: NAME\ndata: DATA\n\n".
struct SseEvent {
  std::string event;  // the event's name, the same as its data's "type"
  std::string data;   // JSON text with "type"
};

class SseWriter {
 public:
  explicit SseWriter(Responder& responder) : responder_(responder) {}

  // Sends the 200 head (text/event-stream, no caching). False once the peer is gone.
  bool Begin();
  // One event; `data` must not contain a blank line (JSON from dump() never does).
  bool Event(std::string_view data);
  // A named event ("event: NAME" before the data), as the Responses API sends them.
  bool Event(std::string_view name, std::string_view data);
  // The [DONE] event, then the end of the chunked body.
  bool Done();
  // The end of the chunked body without [DONE] (the Responses API ends on its last event).
  bool End();

 private:
  Responder& responder_;
};

// The wire side of a stream of named events (a ReplyStream's): the 200 head goes out with the
// first write, so an error found before any event is still an HTTP status.
class SseEventWriter {
 public:
  explicit SseEventWriter(Responder& responder) : sse_(responder) {}
  // Begins the stream if not yet, then writes `events`; false once the client is gone.
  bool Write(const std::vector<SseEvent>& events);
  bool started() const { return started_; }
  bool End() { return sse_.End(); }

 private:
  SseWriter sse_;
  bool started_ = false;
  bool ok_ = true;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_SSE_WRITER_H_
