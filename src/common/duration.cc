#include "common/duration.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace llmd {
namespace {

constexpr double kMaxMs = 1e15;  // about 31,700 years: anything longer is a typo

Status BadDuration(std::string_view text, const std::string& why) {
  return InvalidArgumentError("'" + std::string(text) + "' is not a duration (" + why +
                              "; e.g. 300, 90s, 5m, 1h30m, 500ms)");
}

}  // namespace

Result<int64_t> ParseDurationMs(std::string_view text) {
  std::string_view rest = text;
  double sign = 1;
  if (!rest.empty() && (rest.front() == '-' || rest.front() == '+')) {
    sign = rest.front() == '-' ? -1 : 1;
    rest.remove_prefix(1);
  }
  if (rest.empty()) return BadDuration(text, "empty");
  double total = 0;
  bool bare = true;
  while (!rest.empty()) {
    size_t n = 0;
    while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.')) ++n;
    if (n == 0) return BadDuration(text, "a number must come before each unit");
    const std::string number(rest.substr(0, n));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return BadDuration(text, "'" + number + "' is not a number");
    rest.remove_prefix(n);
    size_t u = 0;
    while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
    const std::string_view unit = rest.substr(0, u);
    rest.remove_prefix(u);
    double scale = 0;
    if (unit.empty()) {
      if (!bare || !rest.empty()) return BadDuration(text, "a unit is missing");
      scale = 1000;  // a bare number is seconds
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60000;
    } else if (unit == "h") {
      scale = 3600000;
    } else {
      return BadDuration(text, "unknown unit '" + std::string(unit) + "'");
    }
    bare = false;
    total += value * scale;
    if (total > kMaxMs) return BadDuration(text, "too long");
  }
  return static_cast<int64_t>(std::floor(sign * total));
}

std::string FormatDurationMs(int64_t ms) {
  if (ms == 0) return "0";
  std::string out = ms < 0 ? "-" : "";
  uint64_t left = static_cast<uint64_t>(ms < 0 ? -ms : ms);
  if (left % 1000 != 0) return out + std::to_string(left) + "ms";
  left /= 1000;
  if (left >= 3600) {
    out += std::to_string(left / 3600) + "h";
    left %= 3600;
  }
  if (left >= 60) {
    out += std::to_string(left / 60) + "m";
    left %= 60;
  }
  if (left > 0) out += std::to_string(left) + "s";
  return out;
}

}  // namespace llmd
