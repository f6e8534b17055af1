#include "proto/frame_codec.h"

#include <algorithm>

namespace llmd::proto {

std::string EncodeFrame(std::string_view payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  out.append(payload);
  return out;
}

Result<size_t> FrameDecoder::Feed(std::string_view data) {
  if (!error_.ok()) return error_;
  if (complete_) return size_t{0};  // the caller must take the frame first
  size_t used = 0;
  while (used < data.size() && got_ < kHeaderBytes) {
    header_[got_++] = static_cast<unsigned char>(data[used++]);
    if (got_ == kHeaderBytes) {
      length_ = (uint32_t{header_[0]} << 24) | (uint32_t{header_[1]} << 16) |
                (uint32_t{header_[2]} << 8) | uint32_t{header_[3]};
      if (length_ == 0) {
        error_ = InvalidArgumentError("empty frame");
        return error_;
      }
      if (length_ > kMaxFrameBytes) {  // checked before any allocation
        error_ = InvalidArgumentError("frame of " + std::to_string(length_) +
                                      " bytes exceeds the " + std::to_string(kMaxFrameBytes) +
                                      "-byte limit");
        return error_;
      }
      payload_.reserve(length_);
    }
  }
  if (got_ >= kHeaderBytes) {
    size_t want = kHeaderBytes + length_ - got_;
    size_t take = std::min(want, data.size() - used);
    payload_.append(data.substr(used, take));
    used += take;
    got_ += take;
    complete_ = got_ == kHeaderBytes + length_;
  }
  return used;
}

std::optional<std::string> FrameDecoder::TakeFrame() {
  if (!complete_) return std::nullopt;
  std::string out = std::move(payload_);
  payload_.clear();
  got_ = 0;
  length_ = 0;
  complete_ = false;
  return out;
}

}  // namespace llmd::proto
