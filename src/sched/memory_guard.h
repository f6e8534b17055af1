// MemoryGuard: refuses new work when memory runs short (robustness item 26), before the
// kernel's OOM killer has to choose. Available memory is the tighter of the cgroup's headroom
// (its limit minus its working set: usage less the inactive file cache the kernel can
// reclaim, as cgroup v2's memory.max/current/stat or v1's limit_in_bytes/usage_in_bytes/stat
// say) and the system's MemAvailable.
//
// Thread-safe. Readings are cached for 100 ms, so a burst of requests reads sysfs once.
#ifndef LLMD_SCHED_MEMORY_GUARD_H_
#define LLMD_SCHED_MEMORY_GUARD_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "llmd/status.h"

namespace llmd::sched {

// Where to read from; tests point these at fake trees.
struct MemorySources {
  std::string proc = "/proc";             // self/cgroup, meminfo
  std::string cgroup = "/sys/fs/cgroup";  // the cgroup filesystem (v2, or v1 with memory/)
};

// Bytes available for new work, or nullopt when nothing could be read.
std::optional<uint64_t> AvailableMemoryBytes(const MemorySources& sources = {});

class MemoryGuard {
 public:
  // `floor_bytes` 0 turns the guard off.
  explicit MemoryGuard(uint64_t floor_bytes, MemorySources sources = {});

  // Ok, or ResourceExhausted "insufficient memory: ..." with both numbers.
  Status Check();

 private:
  const uint64_t floor_bytes_;
  const MemorySources sources_;
  std::mutex mu_;
  int64_t read_ms_ = -1;                // guarded by mu_
  std::optional<uint64_t> available_;   // guarded by mu_
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_MEMORY_GUARD_H_
