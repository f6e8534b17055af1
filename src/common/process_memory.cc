#include "common/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

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
  // /proc/self/maps names each mapping's range and file without looking at its pages, and
  // /proc/self/pagemap says of each page of the file's ranges alone whether it is present: the
  // Rss of their smaps entries, without /proc/self/smaps's walk over every mapping's pages (a
  // large KV cache's among them: 18 ms a read at a 4k context).
  std::ifstream maps("/proc/self/maps");
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return 0;
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  constexpr uint64_t kPresent = uint64_t{1} << 63;
  std::vector<uint64_t> entries;  // a chunk of page entries, allocated at the file's first range
  uint64_t total = 0;
  for (std::string line; std::getline(maps, line);) {
    // "start-end perms offset dev inode   path"
    const size_t slash = line.find('/');
    if (slash == std::string::npos || line.compare(slash, std::string::npos, path) != 0) continue;
    char* rest = nullptr;
    const uint64_t start = std::strtoull(line.c_str(), &rest, 16);
    const uint64_t end = *rest == '-' ? std::strtoull(rest + 1, nullptr, 16) : start;
    entries.resize(size_t{1} << 16);
    for (uint64_t at = start / page; at < end / page;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(entries.size(), end / page - at));
      const ssize_t got = pread(pagemap, entries.data(), want * sizeof(uint64_t),
                                static_cast<off_t>(at * sizeof(uint64_t)));
      if (got <= 0) break;
      const size_t n = static_cast<size_t>(got) / sizeof(uint64_t);
      for (size_t i = 0; i < n; ++i) total += (entries[i] & kPresent) != 0 ? page : 0;
      at += n;
    }
  }
  close(pagemap);
  return total;
}

}  // namespace llmd
