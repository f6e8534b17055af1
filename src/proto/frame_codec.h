// FrameDecoder / EncodeFrame: the length-prefixed framing, pure (bytes in, frames out).
#ifndef LLMD_PROTO_FRAME_CODEC_H_
#define LLMD_PROTO_FRAME_CODEC_H_

#include <optional>
#include <string>
#include <string_view>

#include "llmd/result.h"
#include "proto/frame_format.h"

namespace llmd::proto {

// Prepends the 4-byte big-endian length. `payload` must be 1..kMaxFrameBytes bytes.
std::string EncodeFrame(std::string_view payload);

// Reassembles frames from a byte stream split at any point (one byte per read included).
// After an error the decoder stays failed: the connection must be closed, since the stream
// can no longer be trusted to be in sync. Not thread-safe.
class FrameDecoder {
 public:
  // Appends received bytes. Never allocates more than kHeaderBytes + kMaxFrameBytes.
  // Returns how many bytes were taken (less than data.size() once a frame is complete, so a
  // pipelined frame stays in the caller's buffer) or an InvalidArgument error:
  // "empty frame" or "frame of N bytes exceeds the 65536-byte limit".
  Result<size_t> Feed(std::string_view data);

  // The completed payload, once; afterwards the decoder waits for the next frame.
  std::optional<std::string> TakeFrame();

  // True while part of a frame has been received (a peer closing now truncated it).
  bool mid_frame() const { return got_ > 0 && !complete_; }
  // The length the current frame declared (0 before its header is complete).
  uint32_t declared_length() const { return length_; }

 private:
  unsigned char header_[kHeaderBytes] = {};
  size_t got_ = 0;  // header bytes, then header + payload bytes
  uint32_t length_ = 0;
  std::string payload_;
  bool complete_ = false;
  Status error_;
};

}  // namespace llmd::proto

#endif  // LLMD_PROTO_FRAME_CODEC_H_
