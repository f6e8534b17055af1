#include "proto/postcard.h"

#include <cstring>

#include "common/utf8.h"

namespace llmd::proto {
namespace {
Status Truncated(const char* what) {
  return InvalidArgumentError(std::string("message is truncated in ") + what);
}
}  // namespace

void PostcardWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void PostcardWriter::F32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void PostcardWriter::String(std::string_view s) {
  Varint(s.size());
  out_.append(s);
}

Status PostcardReader::Varint32(uint32_t* v) {
  uint32_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (pos_ >= in_.size()) return Truncated("a varint");
    auto byte = static_cast<uint8_t>(in_[pos_++]);
    if (i == 4 && (byte & 0xF0) != 0) return InvalidArgumentError("varint overflows 32 bits");
    value |= static_cast<uint32_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = value;
      return Status::Ok();
    }
  }
  return InvalidArgumentError("varint overflows 32 bits");
}

Status PostcardReader::Varint64(uint64_t* v) {
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ >= in_.size()) return Truncated("a varint");
    auto byte = static_cast<uint8_t>(in_[pos_++]);
    if (i == 9 && (byte & 0xFE) != 0) return InvalidArgumentError("varint overflows 64 bits");
    value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = value;
      return Status::Ok();
    }
  }
  return InvalidArgumentError("varint overflows 64 bits");
}

Status PostcardReader::U8(uint8_t* v) {
  if (pos_ >= in_.size()) return Truncated("a byte");
  *v = static_cast<uint8_t>(in_[pos_++]);
  return Status::Ok();
}

Status PostcardReader::Bool(bool* v) {
  uint8_t b;
  LLMD_RETURN_IF_ERROR(U8(&b));
  if (b > 1) return InvalidArgumentError("invalid bool " + std::to_string(b));
  *v = b == 1;
  return Status::Ok();
}

Status PostcardReader::F32(float* v) {
  if (remaining() < 4) return Truncated("an f32");
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i) bits |= uint32_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
  pos_ += 4;
  std::memcpy(v, &bits, 4);
  return Status::Ok();
}

Status PostcardReader::String(std::string* s) { return String(s, UINT32_MAX); }

Status PostcardReader::String(std::string* s, uint32_t max_bytes) {
  uint32_t len;
  LLMD_RETURN_IF_ERROR(Varint32(&len));
  if (len > max_bytes) {
    return InvalidArgumentError("string length " + std::to_string(len) + " is over the " +
                                std::to_string(max_bytes) + "-byte limit");
  }
  if (len > remaining()) {
    return InvalidArgumentError("string length " + std::to_string(len) + " exceeds the " +
                                std::to_string(remaining()) + " bytes left in the message");
  }
  std::string_view bytes = in_.substr(pos_, len);
  if (!IsValidUtf8(bytes)) return InvalidArgumentError("string is not valid UTF-8");
  s->assign(bytes);
  pos_ += len;
  return Status::Ok();
}

Status PostcardReader::OptionTag(bool* present) {
  uint8_t b;
  LLMD_RETURN_IF_ERROR(U8(&b));
  if (b > 1) return InvalidArgumentError("invalid Option tag " + std::to_string(b));
  *present = b == 1;
  return Status::Ok();
}

}  // namespace llmd::proto
