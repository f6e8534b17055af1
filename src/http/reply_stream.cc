#include "http/reply_stream.h"

#include <utility>

namespace llmd::http {

std::vector<SseEvent> ReplyStream::Begin() {
  if (!ended_) BeginIfNeeded();
  return Take();
}

std::vector<SseEvent> ReplyStream::Next(const ReplyDelta& delta) {
  if (ended_) return {};
  BeginIfNeeded();
  blocks_.Next(delta, *this);
  return Take();
}

void ReplyStream::BeginIfNeeded() {
  if (begun_) return;
  begun_ = true;
  Started();
}

bool ReplyStream::CatchUp(const engine::ParsedReply& reply) {
  if (ended_) return false;
  BeginIfNeeded();
  blocks_.CatchUp(reply, *this);
  return true;
}

std::vector<SseEvent> ReplyStream::Take() { return std::exchange(out_, {}); }

}  // namespace llmd::http
