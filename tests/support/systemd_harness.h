// A systemd-like start for the daemon tests: a NOTIFY_SOCKET that records what the daemon
// sends (sd_notify), and llmd started with NOTIFY_SOCKET, WATCHDOG_USEC and, when asked, a
// socket passed as LISTEN_FDS. For test programs built with llmd_daemon_test (LLMD_BINARY).
#ifndef LLMD_TESTS_SUPPORT_SYSTEMD_HARNESS_H_
#define LLMD_TESTS_SUPPORT_SYSTEMD_HARNESS_H_

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {

// Binds a datagram socket like systemd's NOTIFY_SOCKET and collects what the daemon sends.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  ~NotifySocket() { ::close(fd_); }
  // Everything received until `needle` is in it, or `limit` passes (a liveness bound).
  std::string DrainUntil(const std::string& needle, std::chrono::milliseconds limit = kLiveness) {
    std::string all;
    WaitFor(
        [&] {
          Receive(&all);
          return all.find(needle) != std::string::npos;
        },
        limit,
        [&](int ms) {
          pollfd p{fd_, POLLIN, 0};
          ::poll(&p, 1, ms);  // back at once when a datagram comes
        });
    return all;
  }
  // Each datagram that comes until `stop` holds, with when it came.
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> Record(const std::atomic<bool>& stop) {
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> got;
    while (!stop.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) got.emplace_back(std::chrono::steady_clock::now(), std::string(buf, static_cast<size_t>(n)));
    }
    return got;
  }
  // Everything received within `ms`.
  std::string Drain(int ms) {
    std::string all;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) all += std::string(buf, static_cast<size_t>(n)) + "\n";
    }
    return all;
  }

 private:
  // Appends the datagrams already waiting, one a line.
  void Receive(std::string* all) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) > 0;) {
      *all += std::string(buf, static_cast<size_t>(n)) + "\n";
    }
  }

  std::string path_;
  int fd_;
};

// Starts llmd under a systemd-like environment: NOTIFY_SOCKET, WATCHDOG_USEC and, when
// `listen_fd` >= 0, that socket passed as LISTEN_FDS.
inline pid_t StartUnderSystemd(const std::string& dir, const std::string& notify, int listen_fd,
                        std::vector<std::string> args = {}) {
  if (args.empty()) args = {"--model", TinyModelPath(), "--socket", dir + "/own.sock"};
  pid_t pid = ::fork();
  if (pid == 0) {
    DieWithParent();
    int log = ::open((dir + "/log").c_str(), O_WRONLY | O_CREAT, 0644);
    ::dup2(log, 1);  // never hold ctest's output pipe open
    ::dup2(log, 2);
    ::setenv("NOTIFY_SOCKET", notify.c_str(), 1);
    ::setenv("WATCHDOG_USEC", "400000", 1);
    ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
    if (listen_fd >= 0) {
      ::dup2(listen_fd, 3);
      ::setenv("LISTEN_FDS", "1", 1);
      ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    }
    std::vector<char*> argv = {const_cast<char*>(LLMD_BINARY)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(LLMD_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_SYSTEMD_HARNESS_H_
