// RandomAccessFile: bounded reads from a model file, through an interface so that the format
// checks run the same on a real file (pread, never mmap: a file truncated under us gives an
// error, not SIGBUS) and on bytes in memory (unit tests, fuzzers).
#ifndef LLMD_FORMAT_RANDOM_ACCESS_FILE_H_
#define LLMD_FORMAT_RANDOM_ACCESS_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::format {

// Thread-safety: Read may be called concurrently; the object must outlive its readers.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Size in bytes, fixed when the file was opened.
  virtual uint64_t size() const = 0;
  // Reads exactly `n` bytes at `offset` into `dst`. Reading past size() is a Corruption error
  // ("file is truncated"); `dst` is then unspecified.
  virtual Status Read(uint64_t offset, size_t n, char* dst) const = 0;
};

// Opens `path` read-only. Refuses, with a message naming the path, anything that is not a
// regular file (a directory, /dev/zero, a FIFO that would block), a missing file
// (NotFound) and one that cannot be read (permission denied).
Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path);

// A file held in memory; `bytes` is copied.
std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string_view bytes);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_RANDOM_ACCESS_FILE_H_
