// The systemd notification protocol (sd_notify): READY, STATUS, WATCHDOG, STOPPING,
// RELOADING. Every call is a no-op when not run by systemd (NOTIFY_SOCKET unset).
#ifndef LLMD_DAEMON_SD_NOTIFY_H_
#define LLMD_DAEMON_SD_NOTIFY_H_

#include <cstdint>
#include <string>

namespace llmd::daemon {

void Notify(const std::string& state);
// The watchdog interval systemd expects pings at, in ms; 0 when no watchdog is set.
int64_t WatchdogIntervalMs();

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_SD_NOTIFY_H_
