// Postcard (the Rust serde format the reference daemon uses), the parts our messages need:
// unsigned varints (LEB128, at most 5 bytes for u32), u8 and bool as one byte, f32 as 4
// little-endian bytes, strings as varint length + UTF-8 bytes, Option as a 0/1 tag, and enum
// variants as a varint index. Pure; not thread-safe per object.
#ifndef LLMD_PROTO_POSTCARD_H_
#define LLMD_PROTO_POSTCARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmd/status.h"

namespace llmd::proto {

class PostcardWriter {
 public:
  void Varint(uint64_t v);
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void Bool(bool v) { U8(v ? 1 : 0); }
  void F32(float v);
  void String(std::string_view s);
  template <typename T, typename Fn>
  void Option(const std::optional<T>& v, Fn write) {
    Bool(v.has_value());
    if (v) write(*v);
  }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Every method bounds-checks against the input and fails with InvalidArgument naming what
// was wrong; nothing is allocated beyond the input's own size.
class PostcardReader {
 public:
  explicit PostcardReader(std::string_view in) : in_(in) {}

  Status Varint32(uint32_t* v);
  Status Varint64(uint64_t* v);
  Status U8(uint8_t* v);
  Status Bool(bool* v);
  Status F32(float* v);
  Status String(std::string* s);  // must be valid UTF-8, as Rust's String
  // As String, but a length over `max_bytes` is refused from the length alone.
  Status String(std::string* s, uint32_t max_bytes);
  Status OptionTag(bool* present);

  template <typename T, typename Fn>
  Status Option(std::optional<T>* v, Fn read) {
    bool present;
    LLMD_RETURN_IF_ERROR(OptionTag(&present));
    if (!present) {
      v->reset();
      return Status::Ok();
    }
    T value{};
    LLMD_RETURN_IF_ERROR(read(&value));
    *v = std::move(value);
    return Status::Ok();
  }

  bool done() const { return pos_ == in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace llmd::proto

#endif  // LLMD_PROTO_POSTCARD_H_
