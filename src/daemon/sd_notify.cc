#include "daemon/sd_notify.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cerrno>
#include <cstring>

namespace llmd::daemon {

namespace {

// How long a notification waits for room in the service manager's queue before it is dropped.
constexpr int kNotifyWaitMs = 1000;

}  // namespace

// sd_notify() blocks while the manager's datagram queue is full (10 messages by default), and
// the main loop that sends the watchdog pings is the one that handles SIGTERM: a manager that
// stopped reading would keep llmd from stopping. So the datagram is sent without blocking,
// waiting for room at most kNotifyWaitMs; after that it is dropped (a missed ping is what a
// stuck manager would see anyway).
void Notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;  // not run by systemd (or vsock: not served)
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t length = std::strlen(path);
  if (length >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, length);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // an abstract socket
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  const auto addr_length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), addr_length) == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kNotifyWaitMs);
    while (::send(fd, state.data(), state.size(), MSG_NOSIGNAL) < 0 && (errno == EAGAIN || errno == EINTR)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(left.count()));
    }
  }
  ::close(fd);
}

int64_t WatchdogIntervalMs() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? static_cast<int64_t>(usec / 1000) : 0;
}

}  // namespace llmd::daemon
