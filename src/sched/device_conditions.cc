#include "sched/device_conditions.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>
#include <vector>

namespace llmd::sched {
namespace {

namespace fs = std::filesystem;

// Readings outside this range are a driver's placeholder (-273 °C, 0x7fffffff), not a heat.
constexpr double kMinPlausibleCelsius = -50;
constexpr double kMaxPlausibleCelsius = 200;

// The first line of a sysfs attribute, trailing whitespace removed; nullopt when unreadable
// (missing, or a driver that answers EIO/ENODATA, as some thermal zones do while powered off).
std::optional<std::string> ReadAttribute(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
  return line;
}

std::optional<int64_t> ReadInteger(const fs::path& path) {
  const std::optional<std::string> text = ReadAttribute(path);
  if (!text || text->empty()) return std::nullopt;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// The entries of `dir` whose names start with `prefix`, sorted so that ties resolve the same
// way on every read; empty when `dir` is missing. `listed` says whether it could be read.
std::vector<fs::path> ListEntries(const fs::path& dir, std::string_view prefix, bool* listed) {
  std::vector<fs::path> entries;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  *listed = !ec;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().starts_with(prefix)) entries.push_back(it->path());
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// Supplies that power the machine from outside: the kernel's "Mains" and "USB", older
// kernels' USB_C/USB_PD/USB_DCP..., and wireless chargers.
bool IsExternalSupply(std::string_view type) {
  return type == "Mains" || type == "USB" || type.starts_with("USB_") || type == "Wireless";
}

void ReadPower(const fs::path& root, DeviceConditions* out) {
  bool listed = false;
  const std::vector<fs::path> supplies = ListEntries(root / "class" / "power_supply", "", &listed);
  if (!listed) return;  // no power_supply class at all (a container): unknown
  int batteries = 0, capacity_sum = 0, capacity_count = 0;
  bool discharging = false, charging = false, settled = false;
  bool external_online = false, external_offline = false;
  for (const fs::path& supply : supplies) {
    // A wireless mouse's or a phone's battery reports itself too, with scope "Device".
    if (ReadAttribute(supply / "scope") == "Device") continue;
    const std::optional<std::string> type = ReadAttribute(supply / "type");
    if (!type) continue;
    if (*type == "Battery") {
      ++batteries;
      const std::optional<std::string> status = ReadAttribute(supply / "status");
      discharging |= status == "Discharging";
      charging |= status == "Charging";
      settled |= status == "Full" || status == "Not charging";
      const std::optional<int64_t> capacity = ReadInteger(supply / "capacity");
      if (capacity && *capacity >= 0 && *capacity <= 100) {
        capacity_sum += static_cast<int>(*capacity);
        ++capacity_count;
      }
    } else if (IsExternalSupply(*type)) {
      const std::optional<int64_t> online = ReadInteger(supply / "online");
      if (online && *online != 0) external_online = true;
      if (online && *online == 0) external_offline = true;
    }
  }
  if (capacity_count > 0) out->battery_percent = (capacity_sum + capacity_count / 2) / capacity_count;
  // In order: a battery that discharges powers the machine whatever else is listed; an online
  // supply or a charging battery means outside power; supplies listed but all offline mean
  // the battery; a battery full or held at a charge limit ("Not charging") is plugged in on a
  // laptop that lists no adapter. Anything else (status "Unknown", unreadable) stays unknown.
  if (batteries == 0) {
    out->on_battery = false;
  } else if (discharging) {
    out->on_battery = true;
  } else if (external_online || charging) {
    out->on_battery = false;
  } else if (external_offline) {
    out->on_battery = true;
  } else if (settled) {
    out->on_battery = false;
  }
}

void ReadThermal(const fs::path& root, DeviceConditions* out) {
  bool listed = false;
  for (const fs::path& zone : ListEntries(root / "class" / "thermal", "thermal_zone", &listed)) {
    const std::optional<int64_t> millidegrees = ReadInteger(zone / "temp");
    if (!millidegrees) continue;
    const double celsius = static_cast<double>(*millidegrees) / 1000.0;
    if (celsius < kMinPlausibleCelsius || celsius > kMaxPlausibleCelsius) continue;
    if (out->hottest_celsius && celsius <= *out->hottest_celsius) continue;
    out->hottest_celsius = celsius;
    std::optional<std::string> type = ReadAttribute(zone / "type");
    out->hottest_zone = type && !type->empty() ? std::move(*type) : zone.filename().string();
  }
}

}  // namespace

DeviceConditions ReadDeviceConditions(const std::string& sysfs_root) {
  DeviceConditions conditions;
  ReadPower(sysfs_root, &conditions);
  ReadThermal(sysfs_root, &conditions);
  return conditions;
}


BackgroundAction DecideBackground(const BackgroundPolicy& policy, const DeviceConditions& conditions) {
  BackgroundAction action = BackgroundAction::kRun;
  if (conditions.on_battery.value_or(false)) action = std::max(action, policy.on_battery);
  if (conditions.hottest_celsius && *conditions.hottest_celsius >= policy.hot_celsius) {
    action = std::max(action, policy.when_hot);
  }
  return action;
}

DeviceConditionsMonitor::DeviceConditionsMonitor(std::string sysfs_root, const Clock& clock, int64_t refresh_ms)
    : sysfs_root_(std::move(sysfs_root)), clock_(clock), refresh_ms_(refresh_ms) {}

DeviceConditions DeviceConditionsMonitor::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.NowMs();
  if (!read_ms_ || now - *read_ms_ >= refresh_ms_) {
    current_ = ReadDeviceConditions(sysfs_root_);
    read_ms_ = now;
  }
  return current_;
}

}  // namespace llmd::sched
