#include "transport/unix_listener.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>

#include <systemd/sd-daemon.h>

namespace llmd::transport {
namespace {

Status Errno(const std::string& what) {
  return InternalError(what + ": " + std::strerror(errno));
}

Result<gid_t> ResolveGroup(const std::string& group) {
  char* end = nullptr;
  unsigned long id = std::strtoul(group.c_str(), &end, 10);
  if (!group.empty() && end == group.c_str() + group.size()) return static_cast<gid_t>(id);
  struct group* g = ::getgrnam(group.c_str());
  if (g == nullptr) return InvalidArgumentError("socket_group '" + group + "' does not exist");
  return g->gr_gid;
}

}  // namespace

bool UnixListener::PassedBySystemd() { return sd_listen_fds(0) == 1; }

Result<std::unique_ptr<UnixListener>> UnixListener::Open(const ListenOptions& o) {
  std::unique_ptr<UnixListener> l(new UnixListener());
  l->path_ = o.path;

  if (o.allow_systemd && sd_listen_fds(0) == 1) {
    int fd = SD_LISTEN_FDS_START;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, nullptr, 0) <= 0) {
      return InvalidArgumentError("LISTEN_FDS passed a descriptor that is not a listening Unix stream socket");
    }
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    l->fd_ = fd;
    l->from_systemd_ = true;
    return l;
  }

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (o.path.empty() || o.path.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("socket path must be 1.." + std::to_string(sizeof addr.sun_path - 1) +
                                " bytes: " + o.path);
  }
  std::memcpy(addr.sun_path, o.path.data(), o.path.size());

  // A missing parent directory (e.g. /run/llmd outside systemd) is created, owner-only
  // writable; an existing one is used as it is.
  if (size_t slash = o.path.rfind('/'); slash != std::string::npos && slash > 0) {
    std::string parent = o.path.substr(0, slash);
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return Errno("cannot create " + parent);
  }

  // The lock decides who owns the path.
  const std::string lock_path = o.path + ".lock";
  l->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (l->lock_fd_ < 0) return Errno("cannot open lock file " + lock_path);
  if (::flock(l->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return UnavailableError("another llmd is already serving " + o.path + " (" + lock_path +
                            " is locked); not touching its socket");
  }

  struct stat st;
  if (::lstat(o.path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return InvalidArgumentError(o.path + " exists and is not a socket (" +
                                  (S_ISLNK(st.st_mode) ? "a symlink" : S_ISREG(st.st_mode) ? "a regular file" : "another kind of file") +
                                  "); refusing to replace it");
    }
    if (::unlink(o.path.c_str()) != 0) return Errno("cannot remove stale socket " + o.path);
  } else if (errno != ENOENT) {
    return Errno("cannot inspect " + o.path);
  }

  l->fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l->fd_ < 0) return Errno("socket");
  mode_t old_umask = ::umask(0177);  // the node is born 0600: no window for other users
  int rc = ::bind(l->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int bind_errno = errno;
  ::umask(old_umask);
  if (rc != 0) {
    errno = bind_errno;
    return Errno("cannot bind " + o.path);
  }
  l->owns_node_ = true;
  if (!o.group.empty()) {
    LLMD_ASSIGN_OR_RETURN(gid_t gid, ResolveGroup(o.group));
    if (::chown(o.path.c_str(), static_cast<uid_t>(-1), gid) != 0) {
      return Errno("cannot give " + o.path + " to group " + o.group);
    }
  }
  if (::chmod(o.path.c_str(), o.mode) != 0) return Errno("cannot chmod " + o.path);
  if (::listen(l->fd_, o.backlog) != 0) return Errno("cannot listen on " + o.path);
  return l;
}

void UnixListener::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (owns_node_) {
    ::unlink(path_.c_str());
    owns_node_ = false;
  }
}

UnixListener::~UnixListener() {
  Close();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace llmd::transport
