// UTF-8 validation and boundary helpers. Pure functions, no allocation beyond the returned
// strings; safe to call from any thread.
#ifndef LLMD_COMMON_UTF8_H_
#define LLMD_COMMON_UTF8_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace llmd {

// Where the first invalid sequence starts, or npos when `text` is valid UTF-8.
// Strict: rejects overlong forms, surrogates (U+D800..DFFF), code points above U+10FFFF,
// lone continuation bytes and a sequence cut off at the end. NUL is valid UTF-8.
size_t FindInvalidUtf8(std::string_view text);
inline bool IsValidUtf8(std::string_view text) {
  return FindInvalidUtf8(text) == std::string_view::npos;
}

// Decodes the character at the start of `text`. Returns its length in bytes (1..4) and stores
// the code point, or returns 0 when the bytes there are invalid or incomplete.
size_t DecodeUtf8Char(std::string_view text, char32_t* code_point);

// Appends the UTF-8 encoding of `cp` (which must be <= U+10FFFF and not a surrogate).
void AppendUtf8(char32_t cp, std::string* out);

// Streams bytes that may split characters (tokens carry byte pieces) and releases only whole,
// valid characters. Invalid bytes become U+FFFD, so the output is always valid UTF-8.
// Not thread-safe; one per stream.
class Utf8StreamAssembler {
 public:
  // Appends `bytes` and returns the text that is now complete.
  std::string Push(std::string_view bytes);
  // Returns what is left: an incomplete tail becomes U+FFFD. Resets the assembler.
  std::string Finish();
  // Bytes held back because they may start a character that is still incomplete (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::string pending_;
};

}  // namespace llmd

#endif  // LLMD_COMMON_UTF8_H_
