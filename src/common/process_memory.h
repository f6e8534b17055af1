// What this process holds in RAM, from /proc (Linux). Used for /metrics, llmctl stats and the
// memory tests; zeros where /proc is not readable.
#ifndef LLMD_COMMON_PROCESS_MEMORY_H_
#define LLMD_COMMON_PROCESS_MEMORY_H_

#include <cstdint>
#include <string>

namespace llmd {

struct ProcessMemory {
  uint64_t resident = 0;       // VmRSS
  uint64_t resident_anon = 0;  // RssAnon: heap, KV cache, scratch, weights read into memory
  uint64_t resident_file = 0;  // RssFile: mapped files (a model loaded with use_mmap), code
  uint64_t peak_resident = 0;  // VmHWM
};

// This process's memory now (/proc/self/status).
ProcessMemory ReadProcessMemory();

// Bytes of `path` this process has mapped and resident (the Rss of its /proc/self/smaps
// entries, read from /proc/self/pagemap for the file's ranges only): a memory-mapped model's
// weights that are in RAM.
uint64_t MappedFileResidentBytes(const std::string& path);

}  // namespace llmd

#endif  // LLMD_COMMON_PROCESS_MEMORY_H_
