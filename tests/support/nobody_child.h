// A child process that runs as nobody (65534): a second real peer UID for daemon tests.
// Needs root to drop to it; tests skip otherwise (SKIP_UNLESS_ROOT).
#ifndef LLMD_TESTS_SUPPORT_NOBODY_CHILD_H_
#define LLMD_TESTS_SUPPORT_NOBODY_CHILD_H_

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

#include "tests/support/daemon_harness.h"

namespace llmd::testing {

constexpr uint32_t kNobody = 65534;

// A child process as nobody, told when to stop through a pipe and telling through another.
// `fn(signal_fd, stop_fd)` runs in the child; its return value is the child's exit code.
class NobodyChild {
 public:
  template <typename Fn>
  explicit NobodyChild(Fn fn) {
    if (::pipe(to_child_) != 0 || ::pipe(from_child_) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      DieWithParent();
      // Only its own ends: an earlier child's pipe held open here would never see its EOF.
      for (int fd = 3; fd < 1024; ++fd) {
        if (fd != to_child_[0] && fd != from_child_[1]) ::close(fd);
      }
      if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
          ::setresuid(kNobody, kNobody, kNobody) != 0) {
        ::_exit(100);
      }
      ::_exit(fn(from_child_[1], to_child_[0]));
    }
    ::close(to_child_[0]);
    ::close(from_child_[1]);
  }
  ~NobodyChild() { (void)Wait(); }
  NobodyChild(const NobodyChild&) = delete;
  NobodyChild& operator=(const NobodyChild&) = delete;

  // Waits for the child's one-byte signal; false if it ended without sending it.
  bool WaitForSignal() {
    char byte = 0;
    return ::read(from_child_[0], &byte, 1) == 1;
  }
  // Tells the child to stop and returns its exit code.
  int Wait() {
    if (pid_ <= 0) return -1;
    ::close(to_child_[1]);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int to_child_[2] = {-1, -1};
  int from_child_[2] = {-1, -1};
};

// Signals, then blocks until told to stop.
inline int SignalAndHold(int signal_fd, int stop_fd) {
  char byte = 1;
  if (::write(signal_fd, &byte, 1) != 1) return 90;
  (void)!::read(stop_fd, &byte, 1);
  return 0;
}

#define SKIP_UNLESS_ROOT() \
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a second peer UID"

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_NOBODY_CHILD_H_
