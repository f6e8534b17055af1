#include "common/process_memory.h"

#include <fstream>
#include <sstream>

namespace llmd {
namespace {

// "VmRSS:	  431912 kB" -> bytes, when `line` starts with `key`.
bool ReadKb(const std::string& line, const char* key, uint64_t* out) {
  const std::string k(key);
  if (line.compare(0, k.size(), k) != 0) return false;
  std::istringstream in(line.substr(k.size()));
  uint64_t kb = 0;
  if (in >> kb) *out = kb * 1024;
  return true;
}

}  // namespace

ProcessMemory ReadProcessMemory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    ReadKb(line, "VmRSS:", &m.resident) || ReadKb(line, "RssAnon:", &m.resident_anon) ||
        ReadKb(line, "RssFile:", &m.resident_file) || ReadKb(line, "VmHWM:", &m.peak_resident);
  }
  return m;
}

uint64_t MappedFileResidentBytes(const std::string& path) {
  if (path.empty()) return 0;
  std::ifstream in("/proc/self/smaps");
  uint64_t total = 0;
  bool in_file = false;
  for (std::string line; std::getline(in, line);) {
    // A mapping's header: "start-end perms offset dev inode   path"; its fields follow.
    const size_t dash = line.find('-');
    const bool header = dash != std::string::npos && dash > 0 && line.find(' ') > dash &&
                        line.find_first_not_of("0123456789abcdef") == dash;
    if (header) {
      const size_t slash = line.find('/');
      in_file = slash != std::string::npos && line.compare(slash, std::string::npos, path) == 0;
      continue;
    }
    uint64_t rss = 0;
    if (in_file && ReadKb(line, "Rss:", &rss)) total += rss;
  }
  return total;
}

}  // namespace llmd
