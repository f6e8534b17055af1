// MemoryGuard on fake /proc and cgroup trees: cgroup v2, v1, no limit, reclaimable cache.
#include "sched/memory_guard.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace llmd::sched {
namespace {

namespace fs = std::filesystem;

class FakeTree {
 public:
  FakeTree() {
    char tmpl[] = "/tmp/llmd_mem_XXXXXX";
    root_ = ::mkdtemp(tmpl);
    fs::create_directories(root_ + "/proc/self");
    fs::create_directories(root_ + "/cgroup");
  }
  ~FakeTree() { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text;
  }
  MemorySources sources() const { return {root_ + "/proc", root_ + "/cgroup"}; }

 private:
  std::string root_;
};

constexpr uint64_t kMiB = 1 << 20;

TEST(MemoryGuard, SystemMemAvailableWithoutACgroupLimit) {
  FakeTree t;
  t.Write("proc/meminfo", "MemTotal: 8000000 kB\nMemFree: 100 kB\nMemAvailable: 2048000 kB\n");
  t.Write("proc/self/cgroup", "0::/system.slice/llmd.service\n");
  t.Write("cgroup/cgroup.controllers", "memory\n");
  t.Write("cgroup/system.slice/llmd.service/memory.max", "max\n");
  t.Write("cgroup/system.slice/llmd.service/memory.current", "123456\n");
  EXPECT_EQ(AvailableMemoryBytes(t.sources()), 2048000ull * 1024);
}

TEST(MemoryGuard, CgroupV2HeadroomExcludesReclaimableCache) {
  FakeTree t;
  t.Write("proc/meminfo", "MemAvailable: 16000000 kB\n");
  t.Write("proc/self/cgroup", "0::/system.slice/llmd.service\n");
  t.Write("cgroup/cgroup.controllers", "memory\n");
  const std::string d = "cgroup/system.slice/llmd.service/";
  t.Write(d + "memory.max", std::to_string(1024 * kMiB));
  t.Write(d + "memory.current", std::to_string(1000 * kMiB));
  t.Write(d + "memory.stat", "anon 700000000\ninactive_file " + std::to_string(200 * kMiB) + "\nactive_file 1\n");
  // 1024 - (1000 - 200) = 224 MiB: the cache can be reclaimed.
  EXPECT_EQ(AvailableMemoryBytes(t.sources()), 224 * kMiB);

  MemoryGuard ok(200 * kMiB, t.sources());
  EXPECT_TRUE(ok.Check().ok());
  MemoryGuard low(300 * kMiB, t.sources());
  Status s = low.Check();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("insufficient memory: 224 MiB available, below the floor of 300 MiB"), std::string::npos)
      << s.message();
}

TEST(MemoryGuard, CgroupV1AndAHostPathFromInsideAContainer) {
  FakeTree t;
  t.Write("proc/meminfo", "MemAvailable: 16000000 kB\n");
  // The path is the host's; inside the container the mounted memory/ root is our cgroup.
  t.Write("proc/self/cgroup", "12:cpu,cpuacct:/docker/abc\n9:memory:/docker/abc\n1:name=systemd:/docker/abc\n");
  t.Write("cgroup/memory/memory.limit_in_bytes", std::to_string(512 * kMiB));
  t.Write("cgroup/memory/memory.usage_in_bytes", std::to_string(500 * kMiB));
  t.Write("cgroup/memory/memory.stat", "cache 1\ntotal_inactive_file " + std::to_string(100 * kMiB) + "\n");
  EXPECT_EQ(AvailableMemoryBytes(t.sources()), 112 * kMiB);
  // v1 reports "no limit" as a huge number: then the system's figure counts.
  t.Write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(AvailableMemoryBytes(t.sources()), 16000000ull * 1024);
}

TEST(MemoryGuard, OverTheLimitIsZeroAndNothingReadableAllows) {
  FakeTree t;
  t.Write("proc/self/cgroup", "0::/\n");
  t.Write("cgroup/cgroup.controllers", "memory\n");
  t.Write("cgroup/memory.max", std::to_string(100 * kMiB));
  t.Write("cgroup/memory.current", std::to_string(150 * kMiB));
  EXPECT_EQ(AvailableMemoryBytes(t.sources()), 0u);
  FakeTree empty;
  EXPECT_FALSE(AvailableMemoryBytes(empty.sources()).has_value());
  EXPECT_TRUE(MemoryGuard(64 * kMiB, empty.sources()).Check().ok()) << "unknown is not a refusal";
  EXPECT_TRUE(MemoryGuard(0, t.sources()).Check().ok()) << "a floor of 0 is off";
}

TEST(MemoryGuard, ThisMachineReportsSomething) {
  auto available = AvailableMemoryBytes();
  ASSERT_TRUE(available.has_value());
  EXPECT_GT(*available, 0u);
}

}  // namespace
}  // namespace llmd::sched
