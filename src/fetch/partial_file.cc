// PartialFile: openat/flock/pwrite/renameat relative to one directory descriptor.
// Thread-safety: one thread per PartialFile (partial_file.h).
#include "fetch/partial_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace llmd::fetch {
namespace {

std::string Errno() { return std::strerror(errno); }

// Opens and locks `name` in `dir_fd`; then checks that the locked file is still the one the
// name points to (another process may have removed or replaced it while we waited to lock).
Result<int> OpenLocked(int dir_fd, const std::string& name, const std::string& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return UnavailableError("cannot open " + path + ": " + Errno());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return UnavailableError(path + " is being downloaded by another process");
      }
      return UnavailableError("cannot lock " + path + ": " + std::strerror(err));
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) != 0) {
      ::close(fd);
      return UnavailableError("cannot stat " + path + ": " + Errno());
    }
    if (::fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      if (!S_ISREG(held.st_mode)) {
        ::close(fd);
        return InvalidArgumentError(path + " is not a regular file");
      }
      return fd;
    }
    ::close(fd);  // replaced under us: open the new one
  }
  return UnavailableError(path + " keeps being replaced by another process");
}

}  // namespace

Status CheckFileName(std::string_view name) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("bad model file name '" + std::string(name) +
                                "': " + std::string(why));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > 200) return bad("longer than 200 bytes");
  if (name.front() == '.') return bad("starts with '.'");
  for (char c : name) {
    if (c == '/') return bad("contains '/'");
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      return bad("contains a control character");
  }
  return Status::Ok();
}

Result<PartialFile> PartialFile::Open(const std::string& directory, const std::string& final_name) {
  LLMD_RETURN_IF_ERROR(CheckFileName(final_name));
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    const bool missing = errno == ENOENT;
    const std::string msg = "model directory " + directory + ": " + Errno();
    return missing ? NotFoundError(msg) : InvalidArgumentError(msg);
  }
  std::string name = final_name + std::string(kSuffix);
  Result<int> fd = OpenLocked(dir_fd, name, directory + "/" + name);
  if (!fd.has_value()) {
    ::close(dir_fd);
    return fd.error();
  }
  struct stat st {};
  ::fstat(*fd, &st);
  return PartialFile(dir_fd, *fd, static_cast<uint64_t>(st.st_size), std::move(name), directory,
                     final_name);
}

PartialFile::PartialFile(int dir_fd, int fd, uint64_t size, std::string name,
                         const std::string& directory, std::string final_name)
    : dir_fd_(dir_fd),
      fd_(fd),
      size_(size),
      name_(std::move(name)),
      final_name_(std::move(final_name)),
      path_(directory + "/" + name_),
      final_path_(directory + "/" + final_name_) {}

PartialFile::PartialFile(PartialFile&& other) noexcept { *this = std::move(other); }

PartialFile& PartialFile::operator=(PartialFile&& other) noexcept {
  if (this == &other) return *this;
  Close();
  dir_fd_ = std::exchange(other.dir_fd_, -1);
  fd_ = std::exchange(other.fd_, -1);
  size_ = other.size_;
  name_ = std::move(other.name_);
  final_name_ = std::move(other.final_name_);
  path_ = std::move(other.path_);
  final_path_ = std::move(other.final_path_);
  return *this;
}

PartialFile::~PartialFile() { Close(); }

void PartialFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  fd_ = dir_fd_ = -1;
}

Status PartialFile::Append(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(size_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // ENOSPC lands here too: the free-space check is a forecast, not a reservation.
      const bool full = errno == ENOSPC || errno == EDQUOT;
      const std::string msg = "writing " + path_ + ": " + Errno();
      return full ? ResourceExhaustedError(msg) : InternalError(msg);
    }
    size_ += static_cast<uint64_t>(n);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status PartialFile::Truncate() {
  if (::ftruncate(fd_, 0) != 0) return InternalError("truncating " + path_ + ": " + Errno());
  size_ = 0;
  return Status::Ok();
}

Status PartialFile::Commit() {
  if (::fsync(fd_) != 0) return InternalError("fsync " + path_ + ": " + Errno());
  if (::renameat(dir_fd_, name_.c_str(), dir_fd_, final_name_.c_str()) != 0) {
    return InternalError("renaming " + path_ + " to " + final_name_ + ": " + Errno());
  }
  // The rename is durable only once the directory is.
  if (::fsync(dir_fd_) != 0)
    return InternalError("fsync of the directory of " + final_path_ + ": " + Errno());
  Close();
  return Status::Ok();
}

void PartialFile::Remove() {
  if (dir_fd_ >= 0) ::unlinkat(dir_fd_, name_.c_str(), 0);
  Close();
}

void PartialFile::RemoveIfEmpty() {
  if (size_ == 0) Remove();
}

bool FileExists(const std::string& directory, const std::string& name) {
  struct stat st {};
  return ::fstatat(AT_FDCWD, (directory + "/" + name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace llmd::fetch
