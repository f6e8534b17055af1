#include "daemon/sd_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace llmd::daemon {
namespace {

// A service manager's notification socket that nobody reads.
class ManagerSocket {
 public:
  ManagerSocket() {
    char dir[] = "/tmp/llmd_notify_XXXXXX";
    dir_ = ::mkdtemp(dir);
    path_ = dir_ + "/notify";
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~ManagerSocket() {
    ::unsetenv("NOTIFY_SOCKET");
    ::close(fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  bool bound() const { return bound_; }
  // The datagrams queued, each as text.
  std::vector<std::string> Read() {
    std::vector<std::string> out;
    char buf[256];
    ssize_t n;
    while ((n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT)) > 0) out.emplace_back(buf, static_cast<size_t>(n));
    return out;
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(SdNotify, ANotificationReachesTheManagerSocket) {
  ManagerSocket manager;
  ASSERT_TRUE(manager.bound());
  Notify("READY=1");
  EXPECT_EQ(manager.Read(), std::vector<std::string>{"READY=1"});
}

// A manager that stops reading must not keep the daemon's main loop (which handles SIGTERM)
// from going on: with its queue full, a notification is dropped, and the call returns.
TEST(SdNotify, AFullManagerQueueDropsTheNotificationInsteadOfBlocking) {
  ManagerSocket manager;
  ASSERT_TRUE(manager.bound());
  // Three more notifications than net.unix.max_dgram_qlen (the kernel queues one past it): each
  // one past the full queue waits its bound for room, then gives up.
  int queue_length = 0;
  std::ifstream("/proc/sys/net/unix/max_dgram_qlen") >> queue_length;
  if (queue_length <= 0 || queue_length > 256) GTEST_SKIP() << "net.unix.max_dgram_qlen is " << queue_length;
  const int kSent = queue_length + 3;
  for (int i = 0; i < kSent; ++i) Notify("WATCHDOG=1 " + std::to_string(i));
  const std::vector<std::string> queued = manager.Read();
  EXPECT_GE(queued.size(), static_cast<size_t>(queue_length));
  EXPECT_LT(queued.size(), static_cast<size_t>(kSent)) << "nothing was dropped: the queue never filled";
  // The first ones are the ones kept, in order; the rest were dropped.
  for (size_t i = 0; i < queued.size(); ++i) EXPECT_EQ(queued[i], "WATCHDOG=1 " + std::to_string(i));
}

TEST(SdNotify, WithoutAManagerEveryCallIsANoOp) {
  ::unsetenv("NOTIFY_SOCKET");
  Notify("READY=1");
  EXPECT_EQ(WatchdogIntervalMs(), 0);
}

}  // namespace
}  // namespace llmd::daemon
