// FrameConnection: one accepted Unix-socket connection, read and written as frames with
// deadlines, so a slow or silent peer can never hold a slot forever (no slowloris).
//
// Thread-safety: one thread at a time. Owns the descriptor.
#ifndef LLMD_TRANSPORT_FRAME_CONNECTION_H_
#define LLMD_TRANSPORT_FRAME_CONNECTION_H_

#include <atomic>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "llmd/status.h"
#include "proto/frame_codec.h"

namespace llmd::transport {

class FrameConnection {
 public:
  explicit FrameConnection(int fd);  // takes ownership; makes it non-blocking
  ~FrameConnection();
  FrameConnection(const FrameConnection&) = delete;
  FrameConnection& operator=(const FrameConnection&) = delete;

  enum class Outcome {
    kFrame,          // payload holds one frame
    kClosed,         // the peer closed between frames
    kTruncated,      // the peer closed in the middle of a frame
    kIdleTimeout,    // no frame started within idle_ms
    kFrameTimeout,   // a frame started but did not finish within frame_ms
    kProtocolError,  // empty or oversized frame: the stream is out of sync
    kStopped,        // *stop became true while waiting
    kIoError,
  };
  struct ReadResult {
    Outcome outcome;
    std::string payload;
    Status error;  // details for kProtocolError and kIoError
  };

  // Waits up to `idle_ms` for a frame to start and then up to `frame_ms` for the rest of
  // it. Frames already received (pipelined) are returned first. Polls `stop` every 100 ms.
  ReadResult ReadFrame(int idle_ms, int frame_ms, const std::atomic<bool>* stop);

  // Sends one frame within `timeout_ms`: DeadlineExceeded when the peer does not take it in
  // time (it stopped reading), Cancelled when the peer is gone.
  Status WriteFrame(std::string_view payload, int timeout_ms);

  // Puts a frame back so the next ReadFrame returns it first (a frame read early, to triage a
  // connection waiting for a slot, is then served by its handler).
  void PushBack(std::string payload) { pushed_back_ = std::move(payload); }

  // True when the peer has closed its end completely (not a half-close after sending).
  bool PeerGone() const;
  int fd() const { return fd_; }

 private:
  int fd_;
  proto::FrameDecoder decoder_;
  std::string pending_;  // received bytes the decoder has not taken yet
  std::optional<std::string> pushed_back_;
  bool eof_ = false;
};

// Outcome name for logs: "idle_timeout", ...
std::string_view OutcomeName(FrameConnection::Outcome o);

}  // namespace llmd::transport

#endif  // LLMD_TRANSPORT_FRAME_CONNECTION_H_
