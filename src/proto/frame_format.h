// The native protocol's framing, shared with the reference daemon (seed 000):
//
//   +-----------------------------+---------------------------+
//   | length: u32, big-endian (4) | payload: postcard (length) |
//   +-----------------------------+---------------------------+
//
// A length above kMaxFrameBytes is refused before anything is allocated; a length of 0 is an
// "empty frame" error. docs/protocol.md gives the payloads byte by byte.
#ifndef LLMD_PROTO_FRAME_FORMAT_H_
#define LLMD_PROTO_FRAME_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace llmd::proto {

inline constexpr size_t kHeaderBytes = 4;
inline constexpr uint32_t kMaxFrameBytes = 64 * 1024;  // the seed's MAX_PAYLOAD_SIZE

}  // namespace llmd::proto

#endif  // LLMD_PROTO_FRAME_FORMAT_H_
