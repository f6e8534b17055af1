// Who may talk to llmd, and how much: robustness-tests.md items 13, 14, 16, 17, 20, 21, 22
// and 48g.
// Peers with another UID are real processes that drop to nobody (65534).
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"

namespace llmd::testing {
namespace {

using proto::ErrorCode;
using proto::Response;

TEST(DaemonAccess, Item13_UnauthorizedUidIsDroppedBeforeAnyByteIsRead) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready()) << d.log();
  // The socket is 0600 root: make it connectable so the peer check itself is what refuses.
  ::chmod(d.socket().c_str(), 0666);
  int rc = RunAsNobody([&] {
    int refused = 0;
    for (int i = 0; i < 5; ++i) {
      RawConn c(d.socket());
      if (!c.connected()) return 10;
      c.Send(HealthRequest());
      refused += c.ClosedByPeer(3000) ? 1 : 0;
    }
    return refused == 5 ? 0 : 1;
  });
  EXPECT_EQ(rc, 0) << "every connection closed with no answer";
  EXPECT_TRUE(d.WaitForLog("peer_rejected uid=65534", std::chrono::seconds(2)));
  EXPECT_EQ(d.CountLog("peer_rejected"), 1u) << "rejections are logged at most once a second";
  LlmClient root(d.socket());
  EXPECT_TRUE(root.HealthCheck().has_value()) << "root is still served";
}

TEST(DaemonAccess, DefaultSocketModeKeepsOtherUsersOut) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready());
  struct stat st;
  ASSERT_EQ(::stat(d.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  int rc = RunAsNobody([&] { return RawConn(d.socket()).connected() ? 1 : 0; });
  EXPECT_EQ(rc, 0) << "connect() is refused by the file mode";
}

TEST(DaemonAccess, Item14_NonRootShutdownIsPermissionDenied) {
  DaemonProcess d({"--allow-uid", "0,65534"});
  ASSERT_TRUE(d.ready());
  ::chmod(d.socket().c_str(), 0666);
  int rc = RunAsNobody([&] {
    LlmClient c(d.socket());
    if (!c.HealthCheck().has_value()) return 2;  // allowed peer: served
    auto e = c.Shutdown();
    if (!e || e->kind != ClientError::Kind::kServerError) return 3;
    return e->server_code == static_cast<uint32_t>(ErrorCode::kPermissionDenied) ? 0 : 4;
  });
  EXPECT_EQ(rc, 0);
  // The daemon logs the refusal before it answers: once the line is there, the request has
  // been dealt with, and a refused shutdown has started nothing.
  EXPECT_TRUE(d.WaitForLog("shutdown_denied uid=65534"));
  EXPECT_EQ(d.CountLog("shutdown_requested"), 0u);
  EXPECT_TRUE(d.Running());
  EXPECT_TRUE(LlmClient(d.socket()).HealthCheck().has_value());
}

TEST(DaemonAccess, Item16_CredentialsAreThoseOfConnectTime) {
  // A root client connects, then drops to nobody before sending Shutdown. SO_PEERCRED still
  // says root, so the Shutdown is accepted: a descriptor carries its opener's identity.
  DaemonProcess d;
  ASSERT_TRUE(d.ready());
  pid_t child = ::fork();
  if (child == 0) {
    RawConn c(d.socket());
    if (!c.connected()) ::_exit(2);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    proto::Request r;
    r.type = proto::Request::Type::kShutdown;
    c.Send(r);
    ::_exit(c.ClosedByPeer(5000) ? 0 : 4);
  }
  int status;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(d.WaitExit(std::chrono::seconds(10)), 0) << "the daemon stopped: uid 0 was seen";
}

TEST(DaemonAccess, Item17_NoWindowForOtherUsersDuringStartup) {
  std::string dir = MakeTempDir();
  std::string sock = dir + "/llm.sock";
  std::atomic<bool> done{false};
  std::atomic<int> connected{-1};
  std::thread watcher([&] {
    connected = RunAsNobody([&] {
      for (int i = 0; i < 8000; ++i) {
        if (RawConn(sock).connected()) return 1;
        ::usleep(500);
      }
      return 0;
    });
  });
  // The watcher loops while the daemon starts, runs and restarts.
  for (int round = 0; round < 2; ++round) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);  // never hold ctest's output pipe open
      ::dup2(null, 2);
      ::execl(LLMD_BINARY, LLMD_BINARY, "--model", TinyModelPath().c_str(), "--socket", sock.c_str(),
              "--socket-mode", "0660", nullptr);
      ::_exit(127);
    }
    bool up = false;
    for (int i = 0; i < 1500 && !up; ++i) {  // up to 30 s on a loaded machine
      up = LlmClient(sock).HealthCheck().has_value();
      if (!up) ::usleep(20000);
    }
    struct stat st;
    const bool stat_ok = ::stat(sock.c_str(), &st) == 0;
    ::kill(pid, SIGTERM);  // before any assertion can return early
    ::waitpid(pid, nullptr, 0);
    EXPECT_TRUE(up);
    ASSERT_TRUE(stat_ok);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
    EXPECT_EQ(st.st_gid, ::getgid()) << "the intended group";
  }
  watcher.join();
  EXPECT_EQ(connected.load(), 0) << "nobody never connected";
  std::string cmd = "rm -rf " + dir;
  (void)!::system(cmd.c_str());
}

TEST(DaemonAccess, Item20_NoAbstractSocket) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready());
  // Every Unix socket of the daemon's that has a name is one of its two path sockets.
  std::ifstream net("/proc/net/unix");
  std::string line, self_inodes;
  DIR* fds = ::opendir(("/proc/" + std::to_string(d.pid()) + "/fd").c_str());
  ASSERT_NE(fds, nullptr);
  std::vector<std::string> inodes;
  while (auto* e = ::readdir(fds)) {
    char target[256] = {};
    std::string p = "/proc/" + std::to_string(d.pid()) + "/fd/" + e->d_name;
    if (::readlink(p.c_str(), target, sizeof target - 1) > 0 && std::string(target).starts_with("socket:[")) {
      inodes.push_back(std::string(target).substr(8, std::string(target).size() - 9));
    }
  }
  ::closedir(fds);
  int named = 0;
  while (std::getline(net, line)) {
    std::istringstream fields(line);
    std::string f[7];  // Num RefCount Protocol Flags Type St Inode, then Path
    for (auto& x : f) fields >> x;
    std::string path;
    fields >> path;
    if (std::find(inodes.begin(), inodes.end(), f[6]) == inodes.end() || path.empty()) continue;
    EXPECT_NE(path[0], '@') << "abstract socket " << path;
    EXPECT_TRUE(path == d.socket() || path == d.dir() + "/http.sock") << path;
    ++named;
  }
  EXPECT_EQ(named, 2) << "the native and the HTTP socket";
}

TEST(DaemonAccess, Items21_22_RateLimitIsPerUidAndSurvivesReconnects) {
  DaemonProcess d({"--allow-uid", "0,65534", "--rate-limit", "50"});
  ASSERT_TRUE(d.ready());
  ::chmod(d.socket().c_str(), 0666);
  // 1000 requests on one connection, as fast as possible.
  RawConn c(d.socket());
  int limited = 0, served = 0;
  std::string message;
  for (int i = 0; i < 1000; ++i) {
    c.Send(HealthRequest());
    auto r = c.Receive();
    ASSERT_TRUE(r.has_value());
    if (r->type == Response::Type::kError) {
      ++limited;
      message = r->text;
      EXPECT_EQ(r->code, ErrorCode::kInternalError) << "a seed request gets a seed code";
    } else {
      ++served;
    }
  }
  EXPECT_GT(limited, 800);
  EXPECT_GE(served, 50);
  EXPECT_NE(message.find("rate limited, retry after"), std::string::npos) << message;
  // Reconnect churn from the same UID does not reset the bucket.
  int churn_limited = 0;
  for (int i = 0; i < 200; ++i) {
    RawConn fresh(d.socket());
    fresh.Send(HealthRequest());
    auto r = fresh.Receive();
    ASSERT_TRUE(r.has_value());
    churn_limited += r->type == Response::Type::kError;
  }
  EXPECT_GT(churn_limited, 100);
  // Another UID keeps full service meanwhile.
  int rc = RunAsNobody([&] {
    LlmClient nobody(d.socket());
    for (int i = 0; i < 20; ++i) {
      if (!nobody.HealthCheck().has_value()) return 1;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

// 48g: thousands of connections that each send an oversized frame get their error and close,
// but the journal gets a bounded number of lines, and says how many it dropped.
TEST(DaemonAccess, Item48g_AFloodOfBadRequestsDoesNotFloodTheLog) {
  DaemonProcess d({"--rate-limit", "1000000"});
  ASSERT_TRUE(d.ready());
  const std::string oversized("\x00\x10\x00\x01", 4);  // a 1 MiB frame: refused before reading it
  const int kFlood = 5000;
  int answered = 0;
  for (int i = 0; i < kFlood; ++i) {
    RawConn c(d.socket());
    ASSERT_TRUE(c.connected()) << i;
    c.Write(oversized);
    auto r = c.Receive();
    answered += r.has_value() && r->type == Response::Type::kError;
  }
  EXPECT_EQ(answered, kFlood) << "each bad client still gets its error";
  ASSERT_TRUE(d.WaitForLog("client_lines_suppressed", std::chrono::seconds(5))) << "the drop is reported";
  // What happened, not how fast: most lines were dropped, every drop that a later line
  // reported is counted there, and nothing is counted twice.
  const size_t lines = d.CountLog("connection_closed");
  const std::string log = d.log();
  size_t suppressed = 0;
  for (size_t at = log.find("client_lines_suppressed lines="); at != std::string::npos;
       at = log.find("client_lines_suppressed lines=", at + 1)) {
    suppressed += std::stoul(log.substr(at + 30));
  }
  std::printf("%d bad frames: %zu connection_closed lines, %zu reported as suppressed\n", kFlood, lines, suppressed);
  EXPECT_LT(lines, static_cast<size_t>(kFlood) / 2) << "the log was not flooded";
  EXPECT_GT(suppressed, 0u);
  EXPECT_LE(lines + suppressed, static_cast<size_t>(kFlood)) << "a dropped line is counted once";
  LlmClient client(d.socket());
  EXPECT_TRUE(client.HealthCheck().has_value()) << "and the daemon serves on";
}

}  // namespace
}  // namespace llmd::testing
