// Who may talk to llmd, and how much: robustness-tests.md items 13, 14, 16, 17, 20, 21, 22
// and 48g.
// Peers with another UID are real processes that drop to nobody (65534).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

using proto::ErrorCode;
using proto::Response;
using Clock = std::chrono::steady_clock;

// Milliseconds since `start`.
long long MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// The lines of `log` that hold `event`, and the sum of their `key`=N fields (if `key` is given).
struct EventLines {
  size_t lines = 0;
  size_t sum = 0;
};
EventLines CountEvent(const std::string& log, const std::string& event, const std::string& key) {
  EventLines out;
  for (size_t at = log.find(event); at != std::string::npos; at = log.find(event, at + 1)) {
    ++out.lines;
    if (key.empty()) continue;
    const size_t end = log.find('\n', at);
    const size_t field = log.find(" " + key + "=", at);
    if (field != std::string::npos && field < end) out.sum += std::stoul(log.substr(field + key.size() + 2));
  }
  return out;
}

TEST(DaemonAccess, Item13_UnauthorizedUidIsDroppedBeforeAnyByteIsRead) {
  DaemonProcess d;
  ASSERT_TRUE(d.ready()) << d.log();
  // The socket is 0600 root: make it connectable so the peer check itself is what refuses.
  ::chmod(d.socket().c_str(), 0666);
  constexpr size_t kTries = 5;
  int rc = RunAsNobody([&] {
    size_t refused = 0;
    for (size_t i = 0; i < kTries; ++i) {
      RawConn c(d.socket());
      if (!c.connected()) return 10;
      c.Send(HealthRequest());
      refused += c.ClosedByPeer() ? 1 : 0;  // an answer would end the wait at once
    }
    return refused == kTries ? 0 : 1;
  });
  EXPECT_EQ(rc, 0) << "every connection closed with no answer";
  // The daemon logs a rejection (or counts it as suppressed) before it closes the connection,
  // so every rejection is accounted for by now; the wait is a liveness bound only.
  EXPECT_TRUE(d.WaitForLog("peer_rejected uid=65534"));
  const EventLines rejected = CountEvent(d.log(), "llmd warn peer_rejected ", "suppressed");
  // Each later line counts the ones suppressed since the line before it, so a rejection is
  // either a line or part of a later line's count, never both.
  EXPECT_GE(rejected.lines, 1u);
  EXPECT_LE(rejected.lines + rejected.sum, kTries) << "a rejection is logged or counted once\n" << d.log();
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
    ::_exit(c.ClosedByPeer() ? 0 : 4);
  }
  int status;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(d.WaitExit(), 0) << "the daemon stopped: uid 0 was seen";
}

TEST(DaemonAccess, Item17_NoWindowForOtherUsersDuringStartup) {
  std::string dir = MakeTempDir();
  std::string sock = dir + "/llm.sock";
  // The watcher (a nobody process) tries to connect until the test says stop, so it watches
  // both rounds whole, however long they take. A closed pipe stops it too.
  int stop[2];
  ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
  std::atomic<int> connected{-1};
  std::thread watcher([&] {
    connected = RunAsNobody([&] {
      ::close(stop[1]);
      while (true) {
        if (RawConn(sock).connected()) return 1;
        pollfd p{stop[0], POLLIN, 0};
        if (::poll(&p, 1, 0) != 0) return 0;
        ::usleep(500);  // pacing only
      }
    });
  });
  // The watcher loops while the daemon starts, runs and restarts. No ASSERT until it is
  // joined: an early return would destroy it unjoined.
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
    const bool up = WaitFor([&] { return LlmClient(sock).HealthCheck().has_value(); });  // liveness only
    struct stat st;
    const bool stat_ok = ::stat(sock.c_str(), &st) == 0;
    ::kill(pid, SIGTERM);  // before any assertion can return early
    ::waitpid(pid, nullptr, 0);
    EXPECT_TRUE(up);
    EXPECT_TRUE(stat_ok);
    if (stat_ok) {
      EXPECT_EQ(st.st_mode & 0777, 0660u);
      EXPECT_EQ(st.st_gid, ::getgid()) << "the intended group";
    }
  }
  (void)!::write(stop[1], "x", 1);
  watcher.join();
  ::close(stop[0]);
  ::close(stop[1]);
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
  // One request a second, and the bucket holds one: 1000 requests (or 200 reconnections) would
  // have to take minutes for the bucket to serve them all, so what the limiter did shows in the
  // counts alone, however loaded the machine.
  constexpr int kRate = 1;
  DaemonProcess d({"--allow-uid", "0,65534", "--rate-limit", std::to_string(kRate)});
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
  EXPECT_GE(served, kRate) << "the burst is served";
  EXPECT_GT(limited, 0) << "requests beyond the bucket are refused";
  EXPECT_NE(message.find("rate limited, retry after"), std::string::npos) << message;
  // Reconnect churn from the same UID does not reset the bucket: over both phases, the UID
  // is served no more than one bucket gives (200 fresh buckets would serve all 200).
  int churn_served = 0;
  for (int i = 0; i < 200; ++i) {
    RawConn fresh(d.socket());
    fresh.Send(HealthRequest());
    auto r = fresh.Receive();
    ASSERT_TRUE(r.has_value());
    churn_served += r->type != Response::Type::kError;
  }
  EXPECT_LT(churn_served, 200) << "one bucket per UID across connections: " << churn_served
                                << " of 200 served after reconnecting";
  // Another UID is served meanwhile, from its own bucket.
  int rc = RunAsNobody([&] {
    LlmClient nobody(d.socket());
    for (int i = 0; i < kRate; ++i) {  // a full bucket of its own
      if (!nobody.HealthCheck().has_value()) return 1;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "another UID's bucket is its own: full while this one's is empty";
}

// 48g: thousands of connections that each send an oversized frame get their error and close,
// but the journal gets a bounded number of lines, and says how many it dropped.
TEST(DaemonAccess, Item48g_AFloodOfBadRequestsDoesNotFloodTheLog) {
  DaemonProcess d({"--rate-limit", "1000000"});
  ASSERT_TRUE(d.ready());
  const std::string oversized("\x00\x10\x00\x01", 4);  // a 1 MiB frame: refused before reading it
  const int kFlood = 5000;
  const auto start = Clock::now();
  int answered = 0;
  for (int i = 0; i < kFlood; ++i) {
    RawConn c(d.socket());
    ASSERT_TRUE(c.connected()) << i;
    c.Write(oversized);
    auto r = c.Receive();
    answered += r.has_value() && r->type == Response::Type::kError;
  }
  EXPECT_EQ(answered, kFlood) << "each bad client still gets its error";
  ASSERT_TRUE(d.WaitForLog("client_lines_suppressed")) << "the drop is reported";
  // What happened, not how fast: lines were dropped and a later line reported them, and
  // nothing is counted twice.
  const std::string log = d.log();
  const long long window_ms = MsSince(start);  // printed only
  const size_t lines = CountEvent(log, "connection_closed", "").lines;
  const size_t suppressed = CountEvent(log, "client_lines_suppressed", "lines").sum;
  std::printf("%d bad frames in %lld ms: %zu connection_closed lines, %zu reported as suppressed\n", kFlood,
              window_ms, lines, suppressed);
  EXPECT_GT(suppressed, 0u) << "the log was not flooded: lines were dropped and counted";
  EXPECT_LE(lines + suppressed, static_cast<size_t>(kFlood)) << "a dropped line is counted once";
  LlmClient client(d.socket());
  EXPECT_TRUE(client.HealthCheck().has_value()) << "and the daemon serves on";
}

}  // namespace
}  // namespace llmd::testing
