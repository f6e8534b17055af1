#include "format/random_access_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace llmd::format {
namespace {

Status TruncatedError(uint64_t offset, size_t n, uint64_t size) {
  return CorruptionError("file is truncated: needs bytes " + std::to_string(offset) + ".." +
                         std::to_string(offset + n) + " but has " + std::to_string(size));
}

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  uint64_t size() const override { return size_; }

  Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > size_ || n > size_ - offset) return TruncatedError(offset, n, size_);
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return CorruptionError(std::string("read failed: ") + std::strerror(errno));
      if (got == 0) return CorruptionError("file shrank while being read");
      done += static_cast<size_t>(got);
    }
    return Status::Ok();
  }

 private:
  int fd_;
  uint64_t size_;
};

class MemoryFile final : public RandomAccessFile {
 public:
  explicit MemoryFile(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Status Read(uint64_t offset, size_t n, char* dst) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      return TruncatedError(offset, n, bytes_.size());
    }
    std::memcpy(dst, bytes_.data() + offset, n);
    return Status::Ok();
  }

 private:
  std::string bytes_;
};

}  // namespace

Result<std::unique_ptr<RandomAccessFile>> OpenRandomAccessFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer. Checked with fstat below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    if (err == ENOENT) return NotFoundError(msg);
    return InvalidArgumentError(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string msg = path + ": " + std::strerror(errno);
    ::close(fd);
    return InvalidArgumentError(msg);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)   ? "a directory"
                       : S_ISCHR(st.st_mode) ? "a character device"
                       : S_ISBLK(st.st_mode) ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                                              : "not a regular file";
    return InvalidArgumentError(path + ": is " + what + ", not a model file");
  }
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<PosixFile>(fd, static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<RandomAccessFile> NewMemoryFile(std::string_view bytes) {
  return std::make_unique<MemoryFile>(bytes);
}

}  // namespace llmd::format
