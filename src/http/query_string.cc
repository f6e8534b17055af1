#include "http/query_string.h"

#include <algorithm>

#include "common/utf8.h"

namespace llmd::http {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `text` decoded ('+' a space, %XX a byte); `what` names it in the error ("parameter 3's name").
Result<std::string> Decode(std::string_view text, const std::string& what) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      const bool room = i + 2 < text.size();
      const int hi = room ? HexDigit(text[i + 1]) : -1;
      const int lo = room ? HexDigit(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return InvalidArgumentError("malformed query string: " + what + " has a '%' not followed by two hex digits");
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  if (!IsValidUtf8(out)) return InvalidArgumentError("malformed query string: " + what + " is not UTF-8");
  // Control characters have no place in a name or a value, and would only reach logs.
  if (std::any_of(out.begin(), out.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
    return InvalidArgumentError("malformed query string: " + what + " holds a control character");
  }
  return out;
}

}  // namespace

Result<QueryParams> ParseQueryString(std::string_view raw) {
  QueryParams params;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view part = raw.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    if (params.size() == kMaxQueryParams) {
      return InvalidArgumentError("malformed query string: more than " + std::to_string(kMaxQueryParams) +
                                  " parameters");
    }
    const std::string where = "parameter " + std::to_string(params.size() + 1);
    const size_t eq = part.find('=');
    LLMD_ASSIGN_OR_RETURN(std::string name, Decode(part.substr(0, eq), where + "'s name"));
    if (name.empty()) return InvalidArgumentError("malformed query string: " + where + " has no name");
    std::string value;
    if (eq != std::string_view::npos) {
      LLMD_ASSIGN_OR_RETURN(value, Decode(part.substr(eq + 1), "the value of '" + name + "'"));
    }
    params.push_back({std::move(name), std::move(value)});
  }
  return params;
}

std::vector<std::string> QueryValues(const QueryParams& query, std::string_view name) {
  std::vector<std::string> values;
  for (const QueryParam& p : query) {
    if (p.name == name) values.push_back(p.value);
  }
  return values;
}

}  // namespace llmd::http
