// UnixListener: the daemon's listening socket, created so that no other user can ever
// connect to it, or taken over from systemd socket activation (LISTEN_FDS).
//
//  - A lock file (<socket>.lock, flock) tells a stale socket from a live daemon: a second
//    instance fails to take the lock and exits without touching the live socket.
//  - A leftover socket node (after kill -9) is removed only while we hold the lock; a
//    symlink, regular file or anything else at the path is refused, never followed or
//    unlinked.
//  - bind() happens under umask 0177, so the node is born 0600; it is then widened to the
//    configured mode (0660 grants the socket group only).
//  - Never an abstract socket.
//
// Thread-safety: construct and destroy on one thread; fd() may be polled from any.
#ifndef LLMD_TRANSPORT_UNIX_LISTENER_H_
#define LLMD_TRANSPORT_UNIX_LISTENER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "llmd/result.h"

namespace llmd::transport {

struct ListenOptions {
  std::string path;
  unsigned mode = 0600;
  std::string group;       // name or numeric gid; empty keeps ours
  int backlog = 64;
  bool allow_systemd = true;  // use a socket passed in LISTEN_FDS if there is one
};

class UnixListener {
 public:
  // Creates or adopts the socket. Errors name the path and the reason.
  static Result<std::unique_ptr<UnixListener>> Open(const ListenOptions& options);
  ~UnixListener();  // closes; removes the node if we created it
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool from_systemd() const { return from_systemd_; }
  // Whether systemd passed this process one socket to serve (LISTEN_FDS), which Open takes
  // when allow_systemd is set.
  static bool PassedBySystemd();
  // Stops accepting and removes the node now (shutdown), keeping the lock until destruction.
  void Close();

 private:
  UnixListener() = default;
  int fd_ = -1;
  int lock_fd_ = -1;
  std::string path_;
  bool from_systemd_ = false;
  bool owns_node_ = false;
};

}  // namespace llmd::transport

#endif  // LLMD_TRANSPORT_UNIX_LISTENER_H_
