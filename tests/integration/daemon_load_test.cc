// Load: robustness-tests.md item 24 (a flood of 1000 connections), with four streams running
// and reconnect churn beside it. Bounded in time; loopback (a Unix socket) only. Checks that a
// well-behaved client is still served, and that descriptors and memory come back down.
#include <poll.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>
#include <utility>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

TEST(DaemonLoad, Item24_ConnectionFloodBesideFourStreams) {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4096);
  ::setrlimit(RLIMIT_NOFILE, &lim);

  DaemonProcess d({"--max-new-tokens", "4096", "--admission-wait-ms", "500", "--rate-limit", "100000"});
  ASSERT_TRUE(d.ready());
  const int fds_before = d.FdCount();
  const long rss_before = d.RssKb();

  // Four long streams hold every slot. A stream counts as started at its first token (or at
  // its end, should it have none), and the flood comes once all four have.
  std::atomic<int> streams_done{0}, streams_started{0};
  std::vector<std::thread> streams;
  for (int i = 0; i < 4; ++i) {
    streams.emplace_back([&, i] {
      bool started = false;
      auto start = [&] {
        if (!std::exchange(started, true)) streams_started++;
      };
      LlmClient c(d.socket(), std::chrono::seconds(60));
      GenerateOptions o;
      o.max_tokens = 120;
      o.temperature = 0.0f;
      auto g = c.GenerateStream("Stream " + std::to_string(i) + ": write at length.", o, [&](std::string_view) {
        start();
        return true;
      });
      start();
      if (g.has_value()) streams_done++;
    });
  }
  // No ASSERT while the stream threads run: an early return would destroy them unjoined.
  EXPECT_TRUE(WaitFor([&] { return streams_started.load() == 4; })) << "the four streams never started";

  // 1000 connections at once, non-blocking so a full backlog is refused, not waited on.
  std::vector<int> flood;
  int connected = 0, refused = 0;
  for (int i = 0; i < 1000; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, d.socket().c_str(), sizeof addr.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ++connected;
      flood.push_back(fd);
    } else {
      ++refused;
      ::close(fd);
    }
  }
  // During the flood a client gets an answer or a refusal, never a hang.
  LlmClient probe(d.socket(), std::chrono::seconds(60));  // liveness only
  std::optional<decltype(probe.HealthCheck())> health;
  std::thread probing([&] { health = probe.HealthCheck(); });
  // Meanwhile the daemon works through the flood: it answers every flood connection (busy, or
  // closed once its admission wait is over) but those that got a slot a stream left (at most
  // four). The descriptors it holds all the while stay bounded.
  auto unanswered = [&] {
    int n = 0;
    for (int fd : flood) {
      pollfd p{fd, POLLIN, 0};
      n += ::poll(&p, 1, 0) == 0;
    }
    return n;
  };
  int peak_fds = 0;
  EXPECT_TRUE(WaitFor([&] {
    peak_fds = std::max(peak_fds, d.FdCount());
    return unanswered() <= 4;
  })) << unanswered() << " flood connections never answered";
  std::printf("flood: %d connected, %d refused at connect; daemon descriptors %d before, %d at most\n", connected,
              refused, fds_before, peak_fds);
  EXPECT_LT(peak_fds, fds_before + 4 + 64 + 70) << "handlers + the bounded waiting list, not one per flood connection";
  probing.join();
  EXPECT_TRUE(health->has_value() || health->error().kind != ClientError::Kind::kTimeout)
      << "an answer or a refusal, never a hang";
  for (int fd : flood) ::close(fd);
  // Reconnect churn beside it.
  for (int i = 0; i < 200; ++i) {
    RawConn c(d.socket());
    c.Send(HealthRequest());
    c.Receive(2000);
  }
  // After the flood a normal request is served. Busy is a fine answer while the four streams
  // hold every slot; once they have ended, a retry gets a slot (no lasting lockout). Each
  // stream ends within its client's liveness bound; the retries are bounded for liveness only.
  auto g = probe.Generate("Hello after the flood", 8);
  for (auto& t : streams) t.join();
  EXPECT_EQ(streams_done.load(), 4) << "the streams finished despite the flood (connected " << connected
                                    << ", refused " << refused << ")";
  EXPECT_TRUE(WaitFor([&] {
    if (!g.has_value()) g = probe.Generate("Hello after the flood", 8);
    return g.has_value();
  }));
  ASSERT_TRUE(g.has_value()) << "no lasting lockout: " << g.error().ToString();

  // The daemon closes each flood descriptor once its handler sees the peer gone.
  EXPECT_TRUE(WaitFor([&] { return d.FdCount() <= fds_before + 2; }))
      << "descriptors back down: " << d.FdCount() << " open, " << fds_before << " before";
  if (!UnderSanitizer()) {
    EXPECT_LT(d.RssKb() - rss_before, 64 * 1024) << "memory bounded";
  }
  EXPECT_TRUE(d.Running());
}

}  // namespace
}  // namespace llmd::testing
