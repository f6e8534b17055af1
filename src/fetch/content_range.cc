// Content-Range parsing: strict, since a wrong resume offset means a wrong model.
// Thread-safety: pure functions.
#include "fetch/content_range.h"

namespace llmd::fetch {
namespace {

// Consumes leading decimal digits of `s` into *out; false when there are none or they overflow
// int64 (no file is that large).
bool TakeNumber(std::string_view& s, uint64_t* out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (static_cast<uint64_t>(INT64_MAX) - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (i == 0) return false;
  s.remove_prefix(i);
  *out = v;
  return true;
}

bool TakeChar(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<ContentRange> ParseContentRange(std::string_view value) {
  std::string_view s = Trim(value);
  if (s.size() < 6 || (s.substr(0, 6) != "bytes " && s.substr(0, 6) != "BYTES "))
    return std::nullopt;
  s.remove_prefix(6);
  s = Trim(s);
  ContentRange r;
  if (TakeChar(s, '*')) {
    r.has_range = false;
  } else {
    r.has_range = true;
    if (!TakeNumber(s, &r.first) || !TakeChar(s, '-') || !TakeNumber(s, &r.last))
      return std::nullopt;
    if (r.last < r.first) return std::nullopt;
  }
  if (!TakeChar(s, '/')) return std::nullopt;
  if (TakeChar(s, '*')) {
    if (!r.has_range) return std::nullopt;  // "bytes */*" says nothing
  } else {
    uint64_t complete = 0;
    if (!TakeNumber(s, &complete)) return std::nullopt;
    r.complete = static_cast<int64_t>(complete);
    if (r.has_range && r.last >= complete) return std::nullopt;
  }
  if (!s.empty()) return std::nullopt;
  return r;
}

}  // namespace llmd::fetch
