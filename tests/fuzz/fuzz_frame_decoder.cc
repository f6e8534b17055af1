// Frame reassembly from arbitrary bytes, fed in arbitrary pieces: never reads out of bounds,
// never allocates past the limit, and every frame it returns is within the limit.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proto/frame_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte chooses the piece size, so splits at every point get explored.
  const size_t piece = 1 + data[0] % 16;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  llmd::proto::FrameDecoder decoder;
  while (!rest.empty()) {
    auto used = decoder.Feed(rest.substr(0, piece));
    if (!used.has_value()) return 0;  // protocol error: the connection would close
    rest.remove_prefix(*used);
    if (auto frame = decoder.TakeFrame()) {
      if (frame->empty() || frame->size() > llmd::proto::kMaxFrameBytes) __builtin_trap();
    } else if (*used == 0) {
      __builtin_trap();  // no progress without a complete frame
    }
  }
  return 0;
}
