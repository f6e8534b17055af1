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

// Allows one line per `interval_ms`; counts what it suppressed so the next line can say so.
// Thread-safe.
class LogRateLimiter {
 public:
  explicit LogRateLimiter(int interval_ms) : interval_ms_(interval_ms) {}
  // True when a line may be written now; *suppressed gets how many were dropped before it.
  bool Allow(long* suppressed);

 private:
  int interval_ms_;
  long long last_ms_ = -1;
  long dropped_ = 0;
};

}  // namespace llmd

#endif  // LLMD_COMMON_LOG_H_
