#include "engine/cpu_placement.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace llmd::engine {
namespace {

// A fake /sys/devices/system/cpu in a temp dir.
class FakeSysfs {
 public:
  FakeSysfs() {
    char tmpl[] = "/tmp/llmd-sysfs-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~FakeSysfs() { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text << "\n";
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(CpuPlacement, PinsToTheBigAndPrimeCoresOfABigLittleSoc) {
  // Snapdragon-like 2 little + 5 big + 1 prime, known by cpu_capacity.
  FakeSysfs fs;
  fs.Write("online", "0-7");
  const int capacity[] = {325, 325, 870, 870, 870, 870, 870, 1024};
  for (int c = 0; c < 8; ++c) {
    fs.Write("cpu" + std::to_string(c) + "/cpu_capacity", std::to_string(capacity[c]));
    fs.Write("cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq", "2000000");
  }
  auto p = PlanCpuPlacement(fs.root(), "auto", 0);
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(p->cpus, (std::vector<int>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p->threads, 6) << "one thread per fast core (the seed's measured sweet spot)";
  EXPECT_EQ(p->source, "cpu_capacity");
  EXPECT_EQ(p->CpuListText(), "2-7");
  // An explicit thread count is kept; the threads share the fast cores.
  EXPECT_EQ(PlanCpuPlacement(fs.root(), "auto", 4)->threads, 4);
}

TEST(CpuPlacement, FallsBackToMaximumFrequency) {
  FakeSysfs fs;
  fs.Write("online", "0-3");
  const char* freq[] = {"1800000", "1800000", "3000000", "3200000"};
  for (int c = 0; c < 4; ++c) fs.Write("cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq", freq[c]);
  auto p = PlanCpuPlacement(fs.root(), "auto", 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(p->source, "cpuinfo_max_freq");
}

TEST(CpuPlacement, LeavesUniformMachinesUnpinned) {
  FakeSysfs fs;
  fs.Write("online", "0-3,6-7");  // 4 and 5 offline
  for (int c : {0, 1, 2, 3, 6, 7}) fs.Write("cpu" + std::to_string(c) + "/cpufreq/cpuinfo_max_freq", "2400000");
  auto p = PlanCpuPlacement(fs.root(), "auto", 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->cpus.empty());
  EXPECT_EQ(p->threads, 6) << "one per online CPU";
  EXPECT_EQ(p->CpuListText(), "any");
  // No speed information at all: the same.
  FakeSysfs bare;
  bare.Write("online", "0-1");
  EXPECT_TRUE(PlanCpuPlacement(bare.root(), "auto", 0)->cpus.empty());
  EXPECT_EQ(PlanCpuPlacement(bare.root(), "auto", 0)->source, "none");
}

TEST(CpuPlacement, ExplicitListsAndNone) {
  FakeSysfs fs;
  fs.Write("online", "0-7");
  for (int c = 0; c < 8; ++c) fs.Write("cpu" + std::to_string(c) + "/cpu_capacity", c < 4 ? "400" : "1024");
  auto list = PlanCpuPlacement(fs.root(), "0,5-6", 0);
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(list->cpus, (std::vector<int>{0, 5, 6}));
  EXPECT_EQ(list->threads, 3);
  auto none = PlanCpuPlacement(fs.root(), "none", 0);
  EXPECT_TRUE(none->cpus.empty());
  EXPECT_EQ(none->threads, 8);
  auto offline = PlanCpuPlacement(fs.root(), "8", 0);
  ASSERT_FALSE(offline.has_value());
  EXPECT_NE(offline.error().message().find("not online"), std::string::npos);
}

TEST(CpuPlacement, ParsesCpuListsStrictly) {
  EXPECT_EQ(*ParseCpuList("0-3,6,8-9"), (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(*ParseCpuList("3,1,1"), (std::vector<int>{1, 3}));
  for (const char* bad : {"", "a", "3-1", "1-", "-1", "1,,2", "99999", "1 2", "0-4096"}) {
    EXPECT_FALSE(ParseCpuList(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace llmd::engine
