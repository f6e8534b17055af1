// Device conditions on fake sysfs trees (power supplies, thermal zones), the background policy,
// and the monitor's cache on a ManualClock.
#include "sched/device_conditions.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace llmd::sched {
namespace {

namespace fs = std::filesystem;

// A throwaway sysfs root: Write("class/power_supply/BAT0/status", "Discharging").
class FakeSysfs {
 public:
  FakeSysfs() {
    char tmpl[] = "/tmp/llmd_sysfs_XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  // sysfs attributes end in a newline; the reader must not mind it.
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text << "\n";
  }
  void Mkdir(const std::string& path) { fs::create_directories(root_ + "/" + path); }

  void Battery(const std::string& name, const std::string& status, int capacity) {
    Write("class/power_supply/" + name + "/type", "Battery");
    Write("class/power_supply/" + name + "/status", status);
    Write("class/power_supply/" + name + "/capacity", std::to_string(capacity));
  }
  void Supply(const std::string& name, const std::string& type, bool online) {
    Write("class/power_supply/" + name + "/type", type);
    Write("class/power_supply/" + name + "/online", online ? "1" : "0");
  }
  void Zone(int index, const std::string& type, const std::string& temp) {
    const std::string dir = "class/thermal/thermal_zone" + std::to_string(index);
    Write(dir + "/type", type);
    Write(dir + "/temp", temp);
  }

  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(DeviceConditionsPower, NoBatteryIsNotOnBattery) {
  FakeSysfs desktop;
  desktop.Supply("AC", "Mains", true);
  EXPECT_EQ(ReadDeviceConditions(desktop.root()).on_battery, false);

  FakeSysfs vm;  // a CI VM: the class exists, with nothing in it
  vm.Mkdir("class/power_supply");
  const DeviceConditions c = ReadDeviceConditions(vm.root());
  EXPECT_EQ(c.on_battery, false);
  EXPECT_EQ(c.battery_percent, std::nullopt);
}

TEST(DeviceConditionsPower, NoPowerSupplyClassIsUnknown) {
  FakeSysfs container;  // no class/power_supply at all: nothing can be said
  EXPECT_EQ(ReadDeviceConditions(container.root()).on_battery, std::nullopt);
  EXPECT_EQ(ReadDeviceConditions(container.root() + "/missing").on_battery, std::nullopt);
}

TEST(DeviceConditionsPower, DischargingWithMainsOfflineIsOnBattery) {
  FakeSysfs t;
  t.Supply("AC", "Mains", false);
  t.Battery("BAT0", "Discharging", 42);
  const DeviceConditions c = ReadDeviceConditions(t.root());
  EXPECT_EQ(c.on_battery, true);
  EXPECT_EQ(c.battery_percent, 42);
}

TEST(DeviceConditionsPower, ChargingWithMainsOnlineIsNotOnBattery) {
  FakeSysfs t;
  t.Supply("AC", "Mains", true);
  t.Battery("BAT0", "Charging", 80);
  const DeviceConditions c = ReadDeviceConditions(t.root());
  EXPECT_EQ(c.on_battery, false);
  EXPECT_EQ(c.battery_percent, 80);
}

TEST(DeviceConditionsPower, NotChargingWithMainsOnlineIsNotOnBattery) {
  FakeSysfs t;  // a charge limit: plugged in, holding at 60%
  t.Supply("ADP1", "Mains", true);
  t.Battery("BAT0", "Not charging", 60);
  EXPECT_EQ(ReadDeviceConditions(t.root()).on_battery, false);
}

TEST(DeviceConditionsPower, UsbOnlineIsExternalPower) {
  FakeSysfs t;  // a battery whose status says nothing; only the USB supply tells
  t.Battery("battery", "Unknown", 55);
  EXPECT_EQ(ReadDeviceConditions(t.root()).on_battery, std::nullopt);
  t.Supply("usb", "USB", true);
  EXPECT_EQ(ReadDeviceConditions(t.root()).on_battery, false);
}

TEST(DeviceConditionsPower, BatteryWithEverySupplyOfflineIsOnBattery) {
  FakeSysfs t;  // "Full" just after unplugging: the offline adapter decides
  t.Supply("AC", "Mains", false);
  t.Supply("usb", "USB", false);
  t.Battery("BAT0", "Full", 100);
  EXPECT_EQ(ReadDeviceConditions(t.root()).on_battery, true);
}

TEST(DeviceConditionsPower, PeripheralBatteriesAreNotTheSystems) {
  FakeSysfs t;  // a desktop with a wireless mouse
  t.Supply("AC", "Mains", true);
  t.Battery("hidpp_battery_0", "Discharging", 30);
  t.Write("class/power_supply/hidpp_battery_0/scope", "Device");
  const DeviceConditions c = ReadDeviceConditions(t.root());
  EXPECT_EQ(c.on_battery, false);
  EXPECT_EQ(c.battery_percent, std::nullopt);
}

TEST(DeviceConditionsThermal, HottestZoneWins) {
  FakeSysfs t;
  t.Zone(0, "acpitz", "45000");
  t.Zone(1, "x86_pkg_temp", "71500");
  const DeviceConditions c = ReadDeviceConditions(t.root());
  EXPECT_EQ(c.hottest_celsius, 71.5);
  EXPECT_EQ(c.hottest_zone, "x86_pkg_temp");
}

TEST(DeviceConditionsThermal, UnreadableAndImplausibleZonesAreSkipped) {
  FakeSysfs t;
  t.Zone(0, "cpu-thermal", "40000");
  t.Mkdir("class/thermal/thermal_zone1/temp");  // reads fail, as a zone answering EIO does
  t.Write("class/thermal/thermal_zone1/type", "iwlwifi_1");
  t.Zone(2, "garbage", "hot");
  t.Zone(3, "placeholder", "250000");     // above 200 °C
  t.Zone(4, "unplugged", "-273000");      // below -50 °C
  t.Mkdir("class/thermal/thermal_zone5");  // no temp at all
  t.Mkdir("class/thermal/cooling_device0");
  const DeviceConditions c = ReadDeviceConditions(t.root());
  EXPECT_EQ(c.hottest_celsius, 40.0);
  EXPECT_EQ(c.hottest_zone, "cpu-thermal");
}

TEST(DeviceConditionsThermal, NoZonesIsUnknown) {
  FakeSysfs t;
  EXPECT_EQ(ReadDeviceConditions(t.root()).hottest_celsius, std::nullopt);
}

TEST(DeviceConditionsThermal, ZoneWithoutTypeIsNamedByItsDirectory) {
  FakeSysfs t;
  t.Write("class/thermal/thermal_zone3/temp", "50000");
  EXPECT_EQ(ReadDeviceConditions(t.root()).hottest_zone, "thermal_zone3");
}

DeviceConditions Conditions(std::optional<bool> on_battery, std::optional<double> celsius) {
  DeviceConditions c;
  c.on_battery = on_battery;
  c.hottest_celsius = celsius;
  return c;
}

TEST(DeviceConditionsPolicy, StricterApplicableActionWins) {
  using A = BackgroundAction;
  constexpr double kCool = 40, kHot = 90;
  const std::optional<bool> kUnknownPower;
  const std::optional<double> kUnknownHeat;
  struct Row {
    A on_battery, when_hot;
    std::optional<bool> battery;
    std::optional<double> celsius;
    A expected;
  };
  const Row rows[] = {
      // Neither condition holds: run, whatever the policy.
      {A::kPause, A::kPause, false, kCool, A::kRun},
      // Only the battery holds: its action.
      {A::kRun, A::kPause, true, kCool, A::kRun},
      {A::kThrottle, A::kPause, true, kCool, A::kThrottle},
      {A::kPause, A::kRun, true, kCool, A::kPause},
      // Only the heat holds: its action.
      {A::kPause, A::kRun, false, kHot, A::kRun},
      {A::kPause, A::kThrottle, false, kHot, A::kThrottle},
      {A::kRun, A::kPause, false, kHot, A::kPause},
      // Both hold: the stricter of the two, each way round.
      {A::kRun, A::kRun, true, kHot, A::kRun},
      {A::kRun, A::kThrottle, true, kHot, A::kThrottle},
      {A::kThrottle, A::kRun, true, kHot, A::kThrottle},
      {A::kThrottle, A::kThrottle, true, kHot, A::kThrottle},
      {A::kPause, A::kThrottle, true, kHot, A::kPause},
      {A::kThrottle, A::kPause, true, kHot, A::kPause},
      {A::kPause, A::kPause, true, kHot, A::kPause},
      // Unknown is never a condition that holds.
      {A::kPause, A::kPause, kUnknownPower, kUnknownHeat, A::kRun},
      {A::kPause, A::kThrottle, kUnknownPower, kHot, A::kThrottle},
      {A::kThrottle, A::kPause, true, kUnknownHeat, A::kThrottle},
      // The threshold itself is hot.
      {A::kRun, A::kPause, false, 85.0, A::kPause},
      {A::kRun, A::kPause, false, 84.9, A::kRun},
  };
  for (const Row& row : rows) {
    const BackgroundPolicy policy{row.on_battery, row.when_hot, 85};
    EXPECT_EQ(DecideBackground(policy, Conditions(row.battery, row.celsius)), row.expected)
        << "on_battery=" << BackgroundActionName(row.on_battery) << " when_hot=" << BackgroundActionName(row.when_hot)
        << " battery=" << (row.battery ? (*row.battery ? "yes" : "no") : "unknown")
        << " celsius=" << (row.celsius ? std::to_string(*row.celsius) : "unknown");
  }
}

TEST(DeviceConditionsPolicy, DefaultsRunOnBatteryAndThrottleWhenHot) {
  const BackgroundPolicy defaults;
  EXPECT_EQ(DecideBackground(defaults, Conditions(true, 40)), BackgroundAction::kRun);
  EXPECT_EQ(DecideBackground(defaults, Conditions(true, 90)), BackgroundAction::kThrottle);
}

TEST(DeviceConditionsPolicy, ParsesTheActionNames) {
  for (BackgroundAction action : {BackgroundAction::kRun, BackgroundAction::kThrottle, BackgroundAction::kPause}) {
    const Result<BackgroundAction> parsed = ParseBackgroundAction(BackgroundActionName(action));
    ASSERT_TRUE(parsed.has_value()) << BackgroundActionName(action);
    EXPECT_EQ(*parsed, action);
  }
  EXPECT_EQ(*ParseBackgroundAction("throttle"), BackgroundAction::kThrottle);
  for (const char* bad : {"stop", "Pause", "", "run "}) {
    const Result<BackgroundAction> parsed = ParseBackgroundAction(bad);
    ASSERT_FALSE(parsed.has_value()) << "'" << bad << "'";
    EXPECT_EQ(parsed.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.error().message().find("run, throttle or pause"), std::string::npos) << parsed.error().message();
  }
}

TEST(DeviceConditionsMonitor, RereadsOnlyAfterTheRefreshInterval) {
  FakeSysfs t;
  t.Supply("AC", "Mains", false);
  t.Battery("BAT0", "Discharging", 50);
  ManualClock clock;
  DeviceConditionsMonitor monitor(t.root(), clock, 5000);
  EXPECT_EQ(monitor.Current().on_battery, true) << "the first call reads";

  t.Supply("AC", "Mains", true);
  t.Battery("BAT0", "Charging", 51);
  clock.Advance(4999);
  EXPECT_EQ(monitor.Current().on_battery, true) << "within the interval: the cached reading";
  clock.Advance(1);
  EXPECT_EQ(monitor.Current().on_battery, false) << "the interval passed: read again";
  EXPECT_EQ(monitor.Current().battery_percent, 51);

  // The next interval counts from that read.
  t.Supply("AC", "Mains", false);
  t.Battery("BAT0", "Discharging", 49);
  clock.Advance(4999);
  EXPECT_EQ(monitor.Current().battery_percent, 51);
  clock.Advance(1);
  EXPECT_EQ(monitor.Current().battery_percent, 49);
}

}  // namespace
}  // namespace llmd::sched
