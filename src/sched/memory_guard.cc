#include "sched/memory_guard.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace llmd::sched {
namespace {

std::optional<uint64_t> ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;  // "max": no limit
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

// The value of `key` in a "key value" file (memory.stat), or 0.
uint64_t StatValue(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  uint64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

std::optional<uint64_t> MemAvailable(const std::string& proc) {
  std::ifstream in(proc + "/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("MemAvailable:")) {
      std::istringstream fields(line.substr(13));
      uint64_t kib;
      if (fields >> kib) return kib * 1024;
    }
  }
  return std::nullopt;
}

// The cgroup's limit less its working set, or nullopt without a limit.
std::optional<uint64_t> CgroupHeadroom(const MemorySources& s) {
  std::ifstream self(s.proc + "/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(self, line)) {
    if (line.starts_with("0::")) v2_path = line.substr(3);
    const size_t colon = line.find(':');
    const size_t second = line.find(':', colon + 1);
    if (colon != std::string::npos && second != std::string::npos) {
      std::string controllers(1, ',');
      controllers.append(line, colon + 1, second - colon - 1).push_back(',');
      if (controllers.find(",memory,") != std::string::npos) v1_path = line.substr(second + 1);
    }
  }
  // Inside a container the path may be the host's: then the mounted root is our cgroup.
  auto dir = [](const std::string& root, const std::string& path) {
    return std::filesystem::exists(root + path) ? root + path : root;
  };
  std::optional<uint64_t> limit, usage;
  uint64_t reclaimable = 0;
  if (!v1_path.empty() && std::filesystem::exists(s.cgroup + "/memory")) {
    const std::string d = dir(s.cgroup + "/memory", v1_path);
    limit = ReadNumber(d + "/memory.limit_in_bytes");
    usage = ReadNumber(d + "/memory.usage_in_bytes");
    reclaimable = StatValue(d + "/memory.stat", "total_inactive_file");
    if (limit && *limit >= (uint64_t{1} << 62)) limit.reset();  // v1's "no limit"
  } else if (std::filesystem::exists(s.cgroup + "/cgroup.controllers")) {
    const std::string d = dir(s.cgroup, v2_path);
    limit = ReadNumber(d + "/memory.max");
    usage = ReadNumber(d + "/memory.current");
    reclaimable = StatValue(d + "/memory.stat", "inactive_file");
  }
  if (!limit || !usage) return std::nullopt;
  const uint64_t working_set = *usage - std::min(*usage, reclaimable);
  return *limit > working_set ? *limit - working_set : 0;
}

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::optional<uint64_t> AvailableMemoryBytes(const MemorySources& sources) {
  std::optional<uint64_t> system = MemAvailable(sources.proc);
  std::optional<uint64_t> cgroup = CgroupHeadroom(sources);
  if (system && cgroup) return std::min(*system, *cgroup);
  return system ? system : cgroup;
}

MemoryGuard::MemoryGuard(uint64_t floor_bytes, MemorySources sources)
    : floor_bytes_(floor_bytes), sources_(std::move(sources)) {}

Status MemoryGuard::Check() {
  if (floor_bytes_ == 0) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = NowMs();
  if (read_ms_ < 0 || now - read_ms_ >= 100) {
    available_ = AvailableMemoryBytes(sources_);
    read_ms_ = now;
  }
  if (!available_ || *available_ >= floor_bytes_) return Status::Ok();
  return ResourceExhaustedError("insufficient memory: " + Mib(*available_) + " available, below the floor of " +
                                Mib(floor_bytes_) + " (memory_floor_mb); retry later");
}

}  // namespace llmd::sched
