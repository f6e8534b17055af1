// JobWaiter: waiting on one submitted job's channel until it ends, the one loop every caller
// of EngineWorker uses (the request runner, warm-up, the embedded LocalEngine). It forwards
// streamed text, watches an optional peer socket for a hang-up and an optional deadline, and
// when it gives up on a job it cancels it and drains it, so the engine is done with the job
// before the caller moves on.
//
// Time comes from an injected Clock and blocking goes through an injected IdleWait, so tests
// drive deadlines and the "engine" by hand, with no sleeps.
//
// Thread-safety: a JobWaiter is immutable; Wait may run on any number of threads at once.
#ifndef LLMD_SCHED_JOB_WAITER_H_
#define LLMD_SCHED_JOB_WAITER_H_

#include <cstdint>
#include <functional>

#include "common/clock.h"
#include "sched/job.h"

namespace llmd::sched {

// The socket of whoever asked for the job: when it hangs up, nobody will read the answer.
struct PeerWatch {
  int fd = -1;                      // -1: no peer to watch
  bool half_close_is_gone = false;  // a peer that shut down its writing side is gone too
};

struct WaitOptions {
  // A cancelled job ends at the engine's next step; a drain that takes longer means a stuck
  // engine, which the watchdog handles. The channel is shared, so leaving early is safe.
  static constexpr int64_t kDefaultDrainLimitMs = 30000;
  static constexpr int64_t kDrainUntilEnd = -1;

  int64_t deadline_ms = 0;  // on the waiter's clock; 0: none
  PeerWatch peer;
  // Receives each kText event; null: text is dropped (a job that does not stream, or one
  // whose text is held back, as under the guard). Returning false means the receiver cannot
  // take more: the job is cancelled and drained (WaitEnd::kStopped).
  std::function<bool(const JobEvent&)> on_text;
  // How long to wait for a cancelled job's final event; kDrainUntilEnd: as long as it takes
  // (an in-process caller that wants the cancelled job's stats).
  int64_t drain_limit_ms = kDefaultDrainLimitMs;
};

enum class WaitEnd {
  kDone,      // the job finished: `completion` is its answer
  kError,     // the job failed: `error` says why
  kStopped,   // on_text refused an event; the job was cancelled and drained
  kPeerGone,  // the peer hung up; the job was cancelled and drained
  kTimedOut,  // the deadline passed; the job was cancelled and drained
};

struct WaitResult {
  WaitEnd end = WaitEnd::kError;
  // kDone: the answer. After a cancel: the cancelled job's final completion, if it ended so.
  engine::Completion completion;
  // kError: why the job failed. After a cancel: the error it ended with, if it did.
  Status error;
  // The job's final event came. False only when a drain ran past its limit.
  bool ended = true;
};

class JobWaiter {
 public:
  // Blocks up to `timeout_ms` until the channel has events or the peer has news. The default
  // polls both; tests replace it to play the engine (push events, move a ManualClock).
  using IdleWait = std::function<void(const JobChannel& channel, const PeerWatch& peer, int timeout_ms)>;

  // How long one idle wait lasts at most, so the deadline is seen without an event.
  static constexpr int kIdlePollMs = 100;

  // `clock` must outlive the waiter.
  explicit JobWaiter(const Clock& clock = RealClock::Get(), IdleWait idle = PollChannelAndPeer);

  // Waits for the job on `channel` to end, as `options` say.
  WaitResult Wait(JobChannel& channel, const WaitOptions& options) const;

  const Clock& clock() const { return clock_; }

  // The default IdleWait: poll(2) on the channel's eventfd and the peer's socket.
  static void PollChannelAndPeer(const JobChannel& channel, const PeerWatch& peer, int timeout_ms);

 private:
  // Cancels the job and waits (up to the drain limit) for its final event.
  WaitResult Abandon(JobChannel& channel, WaitEnd end, int64_t drain_limit_ms) const;
  // The idle wait's length: kIdlePollMs, shortened so the deadline is not overslept.
  int IdleMs(int64_t deadline_ms) const;

  const Clock& clock_;
  IdleWait idle_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_JOB_WAITER_H_
