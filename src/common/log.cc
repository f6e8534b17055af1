#include "common/log.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "common/utf8.h"

namespace llmd {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mu;

const char* Name(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}

int SyslogPriority(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return 7;
    case LogLevel::kInfo: return 6;
    case LogLevel::kWarn: return 4;
    case LogLevel::kError: return 3;
  }
  return 6;
}

// Quotes values with spaces and escapes anything that could break the line.
std::string Escape(std::string_view v) {
  bool quote = v.empty() || v.find_first_of(" \"=") != std::string_view::npos;
  std::string out = quote ? "\"" : "";
  size_t i = 0;
  while (i < v.size()) {
    char32_t cp;
    size_t n = DecodeUtf8Char(v.substr(i), &cp);
    char buf[16];
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(v[i]));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 ||
               cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
      std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02X" : "\\u{%04X}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(v.substr(i, n));
    }
    i += n;
  }
  if (quote) out += '"';
  return out;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

bool ParseLogLevel(std::string_view name, LogLevel* level) {
  for (auto l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == Name(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  static const bool journald = std::getenv("JOURNAL_STREAM") != nullptr;
  std::string line;
  if (journald) line += "<" + std::to_string(SyslogPriority(level)) + ">";
  line += "llmd ";
  line += Name(level);
  line += ' ';
  line += event;
  for (const auto& [k, v] : fields) {
    line += ' ';
    line += k;
    line += '=';
    line += Escape(v);
  }
  line += '\n';
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

bool LogRateLimiter::Allow(long* suppressed) {
  using namespace std::chrono;
  return AllowAt(duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count(), suppressed);
}

bool LogRateLimiter::AllowAt(long long now_ms, long* suppressed) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (last_ms_ < 0) {
    tokens_ = burst_;
  } else if (now_ms > last_ms_) {
    tokens_ = std::min<double>(burst_, tokens_ + static_cast<double>(now_ms - last_ms_) / interval_ms_);
  }
  last_ms_ = std::max(last_ms_, now_ms);
  if (tokens_ < 1) {
    ++dropped_;
    return false;
  }
  tokens_ -= 1;
  *suppressed = dropped_;
  dropped_ = 0;
  return true;
}

}  // namespace llmd
