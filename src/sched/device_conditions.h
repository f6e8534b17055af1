// Device conditions for the background class (issue 26, item 6): whether the machine runs on
// battery and how hot it is, read from sysfs (power_supply, thermal_zone) under an injectable
// root so tests use a fake tree, and the policy that turns them into run, throttle or pause.
// Interactive work is never subject to it: only the background class asks.
//
// Nothing here is an error: a file that is missing or unreadable (a container without /sys, a
// zone whose driver returns EIO) leaves the reading unknown, and unknown never pauses.
#ifndef LLMD_SCHED_DEVICE_CONDITIONS_H_
#define LLMD_SCHED_DEVICE_CONDITIONS_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/request_class.h"
#include "llmd/result.h"

namespace llmd::sched {

struct DeviceConditions {
  // True: running on a battery; false: on external power, or no battery at all (a desktop, a
  // CI VM); nullopt: the power supplies could not be read or do not say.
  std::optional<bool> on_battery;
  // Charge in percent (0..100), the mean over the system's batteries that report it.
  std::optional<int> battery_percent;
  // The hottest thermal zone that gave a plausible reading, in °C, and its type
  // ("x86_pkg_temp", "cpu-thermal"; the zone's directory name when its type is unreadable).
  std::optional<double> hottest_celsius;
  std::string hottest_zone;
};

// Reads <sysfs_root>/class/power_supply/*/ and <sysfs_root>/class/thermal/thermal_zone*/.
// Peripheral batteries (scope "Device": a wireless mouse) are not the system's and are ignored.
DeviceConditions ReadDeviceConditions(const std::string& sysfs_root = "/sys");

// BackgroundAction (common/request_class.h): what background work does under a condition;
// a stricter action wins.

struct BackgroundPolicy {
  BackgroundAction on_battery = BackgroundAction::kRun;
  BackgroundAction when_hot = BackgroundAction::kThrottle;
  double hot_celsius = 85;  // hot from this temperature up
};

// The stricter of the actions whose condition holds (kRun when none does). An unknown power
// state or temperature is taken as the harmless one, so a machine whose sysfs says nothing
// never stops its background work.
BackgroundAction DecideBackground(const BackgroundPolicy& policy, const DeviceConditions& conditions);

// ReadDeviceConditions behind a cache, so the scheduler may ask every step: it re-reads sysfs
// at most once every `refresh_ms` of `clock` (the first Current() reads). Thread-safe.
class DeviceConditionsMonitor {
 public:
  // `clock` must outlive this.
  explicit DeviceConditionsMonitor(std::string sysfs_root, const Clock& clock, int64_t refresh_ms = 5000);

  DeviceConditions Current();

 private:
  const std::string sysfs_root_;
  const Clock& clock_;
  const int64_t refresh_ms_;
  std::mutex mu_;
  std::optional<int64_t> read_ms_;  // guarded by mu_; nullopt until the first read
  DeviceConditions current_;        // guarded by mu_
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DEVICE_CONDITIONS_H_
