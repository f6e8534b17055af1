#include "engine/cpu_placement.h"

#include <algorithm>
#include <fstream>
#include <map>

namespace llmd::engine {
namespace {

constexpr int kMaxCpuId = 4095;
constexpr double kFastShare = 0.6;

// The first number in a sysfs file, or -1.
long ReadNumber(const std::string& path) {
  std::ifstream in(path);
  long v = -1;
  if (!(in >> v)) return -1;
  return v;
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string CpuPlacement::CpuListText() const {
  if (cpus.empty()) return "any";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  auto bad = [&] { return InvalidArgumentError("'" + text + "' is not a CPU list like 0-3,6"); };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t dash = item.find('-');
    auto number = [&](const std::string& s, int* out) {
      if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
      *out = std::stoi(s);
      return *out <= kMaxCpuId;
    };
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!number(item, &lo)) return bad();
      hi = lo;
    } else if (!number(item.substr(0, dash), &lo) || !number(item.substr(dash + 1), &hi) || hi < lo) {
      return bad();
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    pos = end + 1;
  }
  if (cpus.empty()) return bad();
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

Result<CpuPlacement> PlanCpuPlacement(const std::string& sysfs, const std::string& affinity, int threads) {
  if (threads < 0) return InvalidArgumentError("threads must be >= 0");
  auto online = ParseCpuList(ReadLine(sysfs + "/online"));
  if (!online.has_value()) {
    online = std::vector<int>{0};  // no sysfs (a container without it): one CPU we know exists
  }
  CpuPlacement p;
  if (affinity == "none" || affinity == "auto") {
    // Speeds: capacity where the kernel knows it, else the maximum frequency.
    std::map<int, long> speed;
    const std::pair<const char*, const char*> sources[] = {{"cpu_capacity", "cpu_capacity"},
                                                           {"cpufreq/cpuinfo_max_freq", "cpuinfo_max_freq"}};
    for (const auto& [file, name] : sources) {
      speed.clear();
      for (int c : *online) {
        long v = ReadNumber(sysfs + "/cpu" + std::to_string(c) + "/" + file);
        if (v > 0) speed[c] = v;
      }
      if (speed.size() == online->size()) {
        p.source = name;
        break;
      }
    }
    if (speed.size() != online->size()) {
      speed.clear();
      p.source = "none";
    }
    long fastest = 0, slowest = 0;
    for (const auto& [c, v] : speed) {
      fastest = std::max(fastest, v);
      slowest = slowest == 0 ? v : std::min(slowest, v);
    }
    if (affinity == "auto" && fastest > slowest) {
      for (const auto& [c, v] : speed) {
        if (v >= kFastShare * fastest) p.cpus.push_back(c);
      }
      p.reason = "pinned to the fast cores (" + p.source + " >= 60 % of the fastest)";
    } else {
      p.reason = affinity == "none" ? "not pinned (cpu_affinity = none)"
                                    : "not pinned (all online CPUs are equally fast)";
    }
  } else {
    LLMD_ASSIGN_OR_RETURN(p.cpus, ParseCpuList(affinity));
    for (int c : p.cpus) {
      if (!std::binary_search(online->begin(), online->end(), c)) {
        return InvalidArgumentError("cpu_affinity names CPU " + std::to_string(c) + ", which is not online (online: " +
                                    ReadLine(sysfs + "/online") + ")");
      }
    }
    p.source = "config";
    p.reason = "pinned to the configured CPUs";
  }
  const int available = static_cast<int>(p.cpus.empty() ? online->size() : p.cpus.size());
  p.threads = threads > 0 ? threads : available;
  return p;
}

}  // namespace llmd::engine
