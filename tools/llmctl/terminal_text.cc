#include "tools/llmctl/terminal_text.h"

#include <algorithm>
#include <cstdio>

namespace llmd::llmctl {

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[16];
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      std::snprintf(buf, sizeof buf, "\\u{%02x}", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

std::string HumanEta(double seconds) {
  if (!(seconds >= 0) || seconds > 99.0 * 3600) return "?";
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%llum%02llus", static_cast<unsigned long long>(s / 60), static_cast<unsigned long long>(s % 60));
  else std::snprintf(buf, sizeof buf, "%lluh%02llum", static_cast<unsigned long long>(s / 3600), static_cast<unsigned long long>(s / 60 % 60));
  return buf;
}

std::string ProgressBar(std::string_view status, uint64_t done, uint64_t total, double bytes_per_second, int width) {
  std::string out(status);
  const std::string rate = bytes_per_second > 0 ? HumanBytes(static_cast<uint64_t>(bytes_per_second)) + "/s" : "-/s";
  if (total == 0) return out + "  " + HumanBytes(done) + "  " + rate;
  const double fraction = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const int filled = static_cast<int>(fraction * width);
  out += " [" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') + "]";
  char pct[16];
  std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(fraction * 100));
  out += pct;
  out += "  " + HumanBytes(done) + "/" + HumanBytes(total) + "  " + rate;
  const double eta = bytes_per_second > 0 ? static_cast<double>(total - std::min(done, total)) / bytes_per_second : -1;
  return out + "  ETA " + HumanEta(eta);
}

std::string ProgressLine(std::string_view status, uint64_t done, uint64_t total) {
  std::string out = std::string(status) + ": " + std::to_string(done);
  if (total == 0) return out + " bytes";
  const auto pct = static_cast<int>(std::min<uint64_t>(100, done * 100 / total));
  return out + " of " + std::to_string(total) + " bytes (" + std::to_string(pct) + "%)";
}

}  // namespace llmd::llmctl
