#include "http/sse_writer.h"

#include <string>

namespace llmd::http {

bool SseWriter::Begin() {
  return responder_.BeginStream(200, "text/event-stream",
                                {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
}

bool SseWriter::Event(std::string_view data) {
  std::string event = "data: ";
  event.append(data);
  event += "\n\n";
  return responder_.WriteChunk(event);
}

bool SseWriter::Event(std::string_view name, std::string_view data) {
  std::string event = "event: ";
  event.append(name);
  event += "\ndata: ";
  event.append(data);
  event += "\n\n";
  return responder_.WriteChunk(event);
}

bool SseWriter::Done() { return Event("[DONE]") && responder_.EndStream(); }

bool SseWriter::End() { return responder_.EndStream(); }

bool SseEventWriter::Write(const std::vector<SseEvent>& events) {
  if (!started_) {
    started_ = true;
    ok_ = sse_.Begin();
  }
  for (const SseEvent& e : events) {
    if (!ok_) break;
    ok_ = sse_.Event(e.event, e.data);
  }
  return ok_;
}

}  // namespace llmd::http
