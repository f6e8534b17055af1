#include "common/utf8.h"

namespace llmd {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length a lead byte announces (1..4), or 0 for a byte that cannot start a character.
size_t LeadLength(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;  // continuation byte, overlong C0/C1 lead, or F5..FF
}

// Whether bytes[0..n) could still become a valid character once more bytes arrive.
bool IsValidPrefix(std::string_view bytes) {
  size_t need = LeadLength(static_cast<unsigned char>(bytes[0]));
  if (need == 0 || bytes.size() >= need) return false;
  for (size_t i = 1; i < bytes.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if ((c & 0xC0) != 0x80) return false;
    if (i == 1) {  // the second byte carries the overlong/surrogate/range limits
      unsigned char lead = static_cast<unsigned char>(bytes[0]);
      if (lead == 0xE0 && c < 0xA0) return false;
      if (lead == 0xED && c > 0x9F) return false;
      if (lead == 0xF0 && c < 0x90) return false;
      if (lead == 0xF4 && c > 0x8F) return false;
    }
  }
  return true;
}

}  // namespace

size_t DecodeUtf8Char(std::string_view text, char32_t* code_point) {
  if (text.empty()) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t len = LeadLength(p[0]);
  if (len == 0 || len > text.size()) return 0;
  char32_t cp = len == 1 ? p[0] : len == 2 ? (p[0] & 0x1F) : len == 3 ? (p[0] & 0x0F) : (p[0] & 0x07);
  for (size_t i = 1; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return len;
}

size_t FindInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII fast path
      ++i;
      continue;
    }
    char32_t cp;
    size_t n = DecodeUtf8Char(text.substr(i), &cp);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Utf8StreamAssembler::Push(std::string_view bytes) {
  std::string out;
  pending_.append(bytes);
  std::string_view rest(pending_);
  while (!rest.empty()) {
    char32_t cp;
    size_t n = DecodeUtf8Char(rest, &cp);
    if (n > 0) {
      out.append(rest.substr(0, n));
      rest.remove_prefix(n);
    } else if (rest.size() < 4 && IsValidPrefix(rest)) {
      break;  // wait for the rest of this character
    } else {
      out.append(kReplacement);
      rest.remove_prefix(1);
    }
  }
  pending_ = std::string(rest);
  return out;
}

std::string Utf8StreamAssembler::Finish() {
  std::string out = pending_.empty() ? std::string() : std::string(kReplacement);
  pending_.clear();
  return out;
}

}  // namespace llmd
