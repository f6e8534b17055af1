// The systemd watchdog on a daemon whose engine is stuck in one long decode call, on the
// 0.6B model (a program of its own: the other lifecycle tests need only the tiny model, and
// the TSan run, which leaves this one out, then never builds the larger one).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "llmd/client.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/systemd_harness.h"

namespace llmd::testing {
namespace {

namespace fs = std::filesystem;

// Item 48e: the watchdog reports the engine thread's progress, not the accept loop's. One
// decode call over a ~1900-token prompt on the 0.6B model takes seconds (6 s on the 2-core
// development machine); during it the pings stop for longer than WATCHDOG_USEC (400 ms here,
// so systemd would restart a daemon stuck like that for good), and they resume once the
// engine moves again. Asserted on the pings as they came, not on a window of fixed length:
// a loaded machine may start the call late, never early.
TEST(DaemonWatchdog, Item48e_AStalledEngineStopsTheWatchdogPings) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kWatchdog = std::chrono::milliseconds(400);  // WATCHDOG_USEC
  std::string dir = MakeTempDir();
  NotifySocket notify(dir + "/notify");
  const std::string sock = dir + "/own.sock";
  pid_t pid = StartUnderSystemd(dir, dir + "/notify", -1,
                                {"--model", Qwen06bQ4Path(), "--socket", sock, "--http-socket", "off", "--threads", "2",
                                 "--parallel", "1", "--context", "4096", "--batch-tokens", "4096"});
  const std::string got = notify.DrainUntil("READY=1");  // liveness only
  const bool ready = got.find("READY=1") != std::string::npos;
  const bool pinged_idle = notify.DrainUntil("WATCHDOG=1").find("WATCHDOG=1") != std::string::npos;
  std::string prompt;
  for (int i = 0; i < 1900; ++i) prompt += " word";
  std::atomic<bool> answered{false}, ended{false};
  const auto sent = Clock::now();
  std::thread request([&] {
    // A liveness bound only: one 1900-token prefill under a sanitizer on a busy machine can take minutes.
    LlmClient client(sock, std::chrono::seconds(600));
    answered = client.Generate(prompt, 1).has_value();
    ended = true;
  });
  // Every ping while the request is in flight, with when it came.
  const auto during = notify.Record(ended);
  const auto answered_at = Clock::now();
  request.join();
  const std::string after = notify.DrainUntil("WATCHDOG=1");  // liveness only
  ::kill(pid, SIGTERM);  // before any assertion can return early
  int status;
  ::waitpid(pid, &status, 0);
  fs::remove_all(dir);
  ASSERT_TRUE(ready) << got;
  EXPECT_TRUE(pinged_idle) << "an idle engine thread still shows it is alive";
  EXPECT_TRUE(answered.load());
  // The longest time without a ping while the request was in flight.
  Clock::duration longest{0};
  Clock::time_point last = sent;
  std::string pings;
  for (const auto& [at, text] : during) {
    if (text.find("WATCHDOG=1") == std::string::npos) continue;
    longest = std::max(longest, at - last);
    last = at;
    pings += std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(at - sent).count()) + " ";
  }
  longest = std::max(longest, answered_at - last);
  std::printf("longest time without a ping while the request was in flight: %lld ms (answered after %lld ms)\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(answered_at - sent).count()));
  EXPECT_GT(longest, kWatchdog) << "no pings while the engine is stuck in one call; pings at ms " << pings
                                << "after the request, answered at "
                                << std::chrono::duration_cast<std::chrono::milliseconds>(answered_at - sent).count();
  EXPECT_NE(after.find("WATCHDOG=1"), std::string::npos) << "pings resume when it moves again";
}

}  // namespace
}  // namespace llmd::testing
