// PartialFile: the `<final>.partial` file a download writes in the destination directory,
// kept between attempts so the next pull resumes it, and renamed over `<final>` only when
// the bytes are known good (Commit: fsync of the file, rename in the same directory, fsync of
// the directory, so a crash leaves either the old state or the whole new file).
//
// The directory is opened once and every later step is relative to that descriptor, so a
// directory renamed or swapped mid-download cannot redirect the writes. The partial file is
// opened without following symlinks, must be a regular file, and is held under an exclusive
// flock: a second process pulling the same file gets Unavailable instead of interleaving
// bytes (pulls inside one process share one download: pull_registry.h).
//
// Thread-safety: one thread at a time (a download owns its PartialFile).
#ifndef LLMD_FETCH_PARTIAL_FILE_H_
#define LLMD_FETCH_PARTIAL_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::fetch {

// OK when `name` is a plain file name for a model: not empty, at most 200 bytes, no '/', no
// NUL or other control character, not "." or "..", not starting with '.' (hidden files and
// our own ".partial" leftovers are not models).
Status CheckFileName(std::string_view name);

class PartialFile {
 public:
  static constexpr std::string_view kSuffix = ".partial";

  // Opens (creating when absent) `<directory>/<final_name>.partial` and locks it.
  static Result<PartialFile> Open(const std::string& directory, const std::string& final_name);

  PartialFile(PartialFile&& other) noexcept;
  PartialFile& operator=(PartialFile&& other) noexcept;
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  ~PartialFile();  // closes it, which releases the lock; the file stays

  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }  // the .partial file's path
  const std::string& final_path() const { return final_path_; }

  // Writes `bytes` at the end.
  Status Append(std::string_view bytes);
  // Empties the file (a restart from byte 0).
  Status Truncate();
  // fsync, rename over the final name, fsync the directory. The PartialFile is spent after.
  Status Commit();
  // Deletes the file (its bytes are wrong); the PartialFile is spent after.
  void Remove();
  // Deletes the file when it holds no byte: nothing to resume, nothing left behind.
  void RemoveIfEmpty();

 private:
  PartialFile(int dir_fd, int fd, uint64_t size, std::string name, const std::string& directory,
              std::string final_name);
  void Close();

  int dir_fd_ = -1;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string name_;  // "<final>.partial"
  std::string final_name_;
  std::string path_;
  std::string final_path_;
};

// True when `<directory>/<name>` exists (any kind of entry).
bool FileExists(const std::string& directory, const std::string& name);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_PARTIAL_FILE_H_
