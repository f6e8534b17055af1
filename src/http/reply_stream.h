// ReplyStream: what every streamed reply does, whatever the API: its opening events once,
// before anything else; its blocks (BlockStream) as deltas arrive; its closing events once;
// and nothing after those. An API's stream (AnthropicStream, ResponsesStream) derives from it,
// names the events (Started and the BlockEvents) and writes its Finish and Fail around
// CatchUp and End, which are where the APIs differ.
//
// Thread-safety: one thread.
#ifndef LLMD_HTTP_REPLY_STREAM_H_
#define LLMD_HTTP_REPLY_STREAM_H_

#include <string>
#include <vector>

#include "engine/types.h"
#include "http/block_stream.h"
#include "http/reply_deltas.h"
#include "http/sse_writer.h"

namespace llmd::http {

class ReplyStream : public BlockEvents {
 public:
  // The opening events if not sent yet; nothing once the stream has ended.
  std::vector<SseEvent> Begin();
  // The events of a delta (the opening ones first if not sent yet); nothing once ended.
  std::vector<SseEvent> Next(const ReplyDelta& delta);

 protected:
  // Adds the opening events (Anthropic's message_start, Responses' response.created, ...).
  virtual void Started() = 0;
  void BeginIfNeeded();
  // Finish's common start: false when the stream has ended already; else it has begun and its
  // blocks have caught up with the final parse (the last block still open).
  bool CatchUp(const engine::ParsedReply& reply);
  // After this, Begin, Next and CatchUp add nothing; the events added so far still go out.
  void End() { ended_ = true; }
  bool ended() const { return ended_; }

  void Add(std::string event, std::string data) {
    out_.push_back({std::move(event), std::move(data)});
  }
  std::vector<SseEvent> Take();

  BlockStream blocks_;

 private:
  bool begun_ = false, ended_ = false;
  std::vector<SseEvent> out_;  // the events of the current call
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_REPLY_STREAM_H_
