#include "chat/text_safety.h"

#include <cstdio>

#include "common/utf8.h"

namespace llmd::chat {

Result<std::string> SanitizeUserInput(std::string_view text) {
  if (size_t bad = FindInvalidUtf8(text); bad != std::string_view::npos) {
    return InvalidArgumentError("prompt is not valid UTF-8 (first bad byte at offset " +
                                std::to_string(bad) + ")");
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\' && i + 1 < text.size() &&
        (text[i + 1] == 'n' || text[i + 1] == 't' || text[i + 1] == 'r')) {
      ++i;  // drop the typed escape pair
      continue;
    }
    bool c0_control = c < 0x20 && c != '\t' && c != '\n' && c != '\r';
    if (c0_control || c == 0x7F) continue;
    out.push_back(static_cast<char>(c));  // multibyte characters pass through byte by byte
  }
  return out;
}

std::string EscapeForLog(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  size_t i = 0;
  while (i < text.size()) {
    char32_t cp;
    size_t n = DecodeUtf8Char(text.substr(i), &cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
      continue;
    }
    bool unsafe = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 ||
                  cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                  (cp >= 0x2066 && cp <= 0x2069) || cp == '\\';
    if (cp == '\\') {
      out += "\\\\";
    } else if (unsafe) {
      std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02X" : "\\u{%04X}",
                    static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace llmd::chat
