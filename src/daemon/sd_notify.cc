#include "daemon/sd_notify.h"

#include <systemd/sd-daemon.h>

namespace llmd::daemon {

void Notify(const std::string& state) { sd_notify(0, state.c_str()); }

int64_t WatchdogIntervalMs() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? static_cast<int64_t>(usec / 1000) : 0;
}

}  // namespace llmd::daemon
