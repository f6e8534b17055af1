// Structured logging: one line per event, "level event key=value ...", to stderr. Under
// systemd (JOURNAL_STREAM set) each line starts with its syslog priority ("<6>") so journald
// files it at the right level. Values are escaped so one record stays one line.
//
// Thread-safe: lines from different threads never interleave.
#ifndef LLMD_COMMON_LOG_H_
#define LLMD_COMMON_LOG_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace llmd {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };

// Lines below `level` are dropped. Default: kInfo.
void SetLogLevel(LogLevel level);
bool ParseLogLevel(std::string_view name, LogLevel* level);
// Whether a line at `level` would be written (to skip building one that would not).
bool LogEnabled(LogLevel level);

using LogField = std::pair<std::string_view, std::string>;
void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});

// A token bucket: up to `burst` lines at once, refilled at one per `interval_ms`; counts what
// it suppressed so the next line can say so. Thread-safe.
class LogRateLimiter {
 public:
  explicit LogRateLimiter(int interval_ms, int burst = 1) : interval_ms_(interval_ms), burst_(burst) {}
  // True when a line may be written now; *suppressed gets how many were dropped before it.
  bool Allow(long* suppressed);
  // The same at a given time (steady clock, ms): for tests.
  bool AllowAt(long long now_ms, long* suppressed);

 private:
  int interval_ms_;
  int burst_;
  double tokens_ = 0;
  long long last_ms_ = -1;
  long dropped_ = 0;
};

}  // namespace llmd

#endif  // LLMD_COMMON_LOG_H_
