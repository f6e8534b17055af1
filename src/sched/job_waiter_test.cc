// JobWaiter on a ManualClock and a channel the test feeds: no engine, no sleeps. Wherever the
// waiter would block, a scripted step plays the engine instead (push events, move the clock,
// hang up the peer), so every test is a fixed sequence of steps.
#include "sched/job_waiter.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace llmd::sched {
namespace {

JobEvent DoneWith(std::string text, engine::FinishReason reason = engine::FinishReason::kStop) {
  engine::Completion c;
  c.text = std::move(text);
  c.stats.finish_reason = reason;
  return JobEvent::Done(std::move(c));
}

// The test's engine: a channel, a clock and the steps to run each time the waiter idles.
class Script {
 public:
  JobWaiter Waiter() {
    return JobWaiter(clock, [this](const JobChannel&, const PeerWatch&, int timeout_ms) { Idle(timeout_ms); });
  }
  void Then(std::function<void()> step) { steps_.push_back(std::move(step)); }
  // A step that answers a cancel as the engine does at its next step: with a cancelled Done.
  void ThenAnswerCancel(std::string text = "") {
    Then([this, text] {
      ASSERT_TRUE(channel.cancelled());
      channel.Push(DoneWith(text, engine::FinishReason::kCancelled));
    });
  }
  void ThenAdvance(int64_t ms) {
    Then([this, ms] { clock.Advance(ms); });
  }

  ManualClock clock;
  JobChannel channel;
  std::vector<int> idle_ms;  // how long each idle wait was allowed to block

 private:
  void Idle(int timeout_ms) {
    idle_ms.push_back(timeout_ms);
    if (steps_.empty()) {  // a waiter that waits past the script would spin: end it, loudly
      ADD_FAILURE() << "the waiter idled past the script";
      channel.Push(JobEvent::Error(InternalError("script over")));
      return;
    }
    auto step = std::move(steps_.front());
    steps_.pop_front();
    step();
  }

  std::deque<std::function<void()>> steps_;
};

// Collects streamed text; refuses the event number `refuse_at` (1-based; 0: never).
struct Receiver {
  std::vector<std::string> got;
  size_t refuse_at = 0;
  std::function<bool(const JobEvent&)> Fn() {
    return [this](const JobEvent& e) {
      got.push_back(e.text);
      return got.size() != refuse_at;
    };
  }
};

TEST(JobWaiter, DoneReturnsTheCompletion) {
  Script s;
  s.channel.Push(JobEvent::Text("a"));
  s.channel.Push(DoneWith("a"));
  WaitResult r = s.Waiter().Wait(s.channel, WaitOptions{});
  EXPECT_EQ(r.end, WaitEnd::kDone);
  EXPECT_EQ(r.completion.text, "a");
  EXPECT_TRUE(r.error.ok());
  EXPECT_TRUE(r.ended);
  EXPECT_FALSE(s.channel.cancelled());
  EXPECT_TRUE(s.idle_ms.empty()) << "nothing to wait for: never idles";
}

TEST(JobWaiter, ErrorEndsTheWait) {
  Script s;
  s.ThenAdvance(10);
  s.Then([&] { s.channel.Push(JobEvent::Error(InvalidArgumentError("prompt is empty"))); });
  WaitResult r = s.Waiter().Wait(s.channel, WaitOptions{});
  EXPECT_EQ(r.end, WaitEnd::kError);
  EXPECT_EQ(r.error, InvalidArgumentError("prompt is empty"));
  EXPECT_FALSE(s.channel.cancelled()) << "a failed job is over; nothing to cancel";
}

TEST(JobWaiter, EventsArriveInOrderAcrossIdleWaits) {
  Script s;
  Receiver rx;
  s.Then([&] { s.channel.Push(JobEvent::Text("Hel")); });
  s.Then([&] {
    s.channel.Push(JobEvent::Text("lo"));
    s.channel.Push(JobEvent::Text(", "));
  });
  s.Then([&] {
    s.channel.Push(JobEvent::Text("world"));
    s.channel.Push(DoneWith("Hello, world"));
    s.channel.Push(JobEvent::Text("after the end"));  // not the waiter's: the job is over
  });
  WaitOptions o;
  o.on_text = rx.Fn();
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kDone);
  EXPECT_EQ(rx.got, (std::vector<std::string>{"Hel", "lo", ", ", "world"}));
  EXPECT_EQ(r.completion.text, "Hello, world");
}

TEST(JobWaiter, TextIsDroppedWithoutAReceiver) {
  Script s;
  s.channel.Push(JobEvent::Text("x"));
  s.channel.Push(DoneWith("x"));
  EXPECT_EQ(s.Waiter().Wait(s.channel, WaitOptions{}).end, WaitEnd::kDone);
}

TEST(JobWaiter, DeadlinePassedCancelsAndDrains) {
  Script s;
  WaitOptions o;
  o.deadline_ms = s.clock.NowMs() + 250;
  s.ThenAdvance(100);
  s.ThenAdvance(100);
  s.ThenAdvance(50);  // exactly at the deadline: not passed yet
  s.ThenAdvance(1);
  s.Then([&] { s.channel.Push(JobEvent::Text("late")); });  // in flight when cancelled
  s.ThenAnswerCancel("partial");
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kTimedOut);
  EXPECT_TRUE(s.channel.cancelled());
  EXPECT_TRUE(r.ended) << "drained to the job's final event";
  EXPECT_EQ(r.completion.stats.finish_reason, engine::FinishReason::kCancelled);
  EXPECT_EQ(r.completion.text, "partial");
  // Idle waits end at the deadline (+1 ms, when it counts as passed), never beyond it.
  EXPECT_EQ(s.idle_ms, (std::vector<int>{100, 100, 51, 1, JobWaiter::kIdlePollMs, JobWaiter::kIdlePollMs}));
}

TEST(JobWaiter, AJobThatEndedBeforeTheDeadlineWasSeenIsDone) {
  Script s;
  WaitOptions o;
  o.deadline_ms = s.clock.NowMs() + 10;
  s.Then([&] {
    s.clock.Advance(1000);
    s.channel.Push(DoneWith("in time"));
  });
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kDone) << "pending events are read before the deadline is checked";
  EXPECT_FALSE(s.channel.cancelled());
}

TEST(JobWaiter, DrainGivesUpAtItsLimit) {
  Script s;
  WaitOptions o;
  o.deadline_ms = s.clock.NowMs() + 1;
  o.drain_limit_ms = 250;
  s.ThenAdvance(2);    // the deadline passes; the engine never answers the cancel
  s.ThenAdvance(100);
  s.ThenAdvance(100);
  s.ThenAdvance(100);  // 300 ms into the drain: past its limit
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kTimedOut);
  EXPECT_FALSE(r.ended);
  EXPECT_TRUE(r.error.ok());
  EXPECT_EQ(s.idle_ms.size(), 4u);
}

TEST(JobWaiter, DrainUntilEndWaitsForTheFinalEvent) {
  Script s;
  Receiver rx;
  rx.refuse_at = 1;
  WaitOptions o;
  o.on_text = rx.Fn();
  o.drain_limit_ms = WaitOptions::kDrainUntilEnd;
  s.channel.Push(JobEvent::Text("stop here"));
  for (int i = 0; i < 5; ++i) s.ThenAdvance(int64_t{1} << 40);  // far past any limit
  s.Then([&] { s.channel.Push(JobEvent::Error(UnavailableError("stopping"))); });
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kStopped);
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(r.error, UnavailableError("stopping")) << "the error the cancelled job ended with";
}

TEST(JobWaiter, ReceiverThatRefusesCancelsTheJob) {
  Script s;
  Receiver rx;
  rx.refuse_at = 2;
  WaitOptions o;
  o.on_text = rx.Fn();
  s.channel.Push(JobEvent::Text("a"));
  s.channel.Push(JobEvent::Text("b"));
  s.channel.Push(JobEvent::Text("c"));  // already generated; nobody reads it
  s.ThenAnswerCancel("abc");
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kStopped);
  EXPECT_TRUE(s.channel.cancelled());
  EXPECT_EQ(rx.got, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.completion.text, "abc");
  EXPECT_EQ(r.completion.stats.finish_reason, engine::FinishReason::kCancelled);
}

TEST(JobWaiter, ACancelFromElsewhereIsWaitedToItsEnd) {
  Script s;
  s.channel.Cancel();  // e.g. EngineWorker::Stop
  s.ThenAnswerCancel("cut");
  WaitResult r = s.Waiter().Wait(s.channel, WaitOptions{});
  EXPECT_EQ(r.end, WaitEnd::kDone);
  EXPECT_EQ(r.completion.stats.finish_reason, engine::FinishReason::kCancelled);
}

// A connected pair of sockets: [0] is the peer's socket as the daemon holds it, [1] the peer.
struct Peer {
  int fds[2] = {-1, -1};
  Peer() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~Peer() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void HangUp() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

TEST(JobWaiter, PeerGoneMidWaitCancelsAndDrains) {
  Script s;
  Peer peer;
  Receiver rx;
  WaitOptions o;
  o.peer.fd = peer.fds[0];
  o.on_text = rx.Fn();
  s.Then([&] { s.channel.Push(JobEvent::Text("a")); });
  s.Then([&] { peer.HangUp(); });
  s.ThenAnswerCancel("ab");
  WaitResult r = s.Waiter().Wait(s.channel, o);
  EXPECT_EQ(r.end, WaitEnd::kPeerGone);
  EXPECT_TRUE(s.channel.cancelled());
  EXPECT_TRUE(r.ended);
  EXPECT_EQ(rx.got, (std::vector<std::string>{"a"}));
}

TEST(JobWaiter, HalfCloseIsGoneOnlyWhenAsked) {
  for (bool half_close_is_gone : {false, true}) {
    SCOPED_TRACE(half_close_is_gone);
    Script s;
    Peer peer;
    ASSERT_EQ(::shutdown(peer.fds[1], SHUT_WR), 0);  // the peer is done sending, still reading
    WaitOptions o;
    o.peer = {peer.fds[0], half_close_is_gone};
    if (half_close_is_gone) s.ThenAnswerCancel();
    else s.Then([&] { s.channel.Push(DoneWith("answered")); });
    WaitResult r = s.Waiter().Wait(s.channel, o);
    EXPECT_EQ(r.end, half_close_is_gone ? WaitEnd::kPeerGone : WaitEnd::kDone);
  }
}

// The default idle wait is a poll on the channel's eventfd: a push from another thread ends it.
TEST(JobWaiter, TheDefaultIdleWakesOnAPush) {
  JobChannel channel;
  std::thread engine([&] { channel.Push(DoneWith("from the engine thread")); });
  WaitResult r = JobWaiter().Wait(channel, WaitOptions{});
  engine.join();
  EXPECT_EQ(r.end, WaitEnd::kDone);
  EXPECT_EQ(r.completion.text, "from the engine thread");
}

}  // namespace
}  // namespace llmd::sched
