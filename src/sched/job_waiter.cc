#include "sched/job_waiter.h"

#include <poll.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/log.h"

namespace llmd::sched {
namespace {

// POLLHUP and POLLERR are always reported; POLLRDHUP only when asked for.
short PeerEvents(const PeerWatch& peer) { return static_cast<short>(peer.half_close_is_gone ? POLLRDHUP : 0); }

// A zero-timeout look at the peer's socket: has it hung up?
bool PeerGone(const PeerWatch& peer) {
  if (peer.fd < 0) return false;
  pollfd p{peer.fd, PeerEvents(peer), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
}

// The job's final event as a result: kDone with its completion, or kError with its error.
WaitResult Finished(JobEvent&& event) {
  WaitResult r;
  if (event.type == JobEvent::Type::kDone) {
    r.end = WaitEnd::kDone;
    r.completion = std::move(event.completion);
  } else {
    r.end = WaitEnd::kError;
    r.error = std::move(event.error);
  }
  return r;
}

}  // namespace

JobWaiter::JobWaiter(const Clock& clock, IdleWait idle) : clock_(clock), idle_(std::move(idle)) {}

void JobWaiter::PollChannelAndPeer(const JobChannel& channel, const PeerWatch& peer, int timeout_ms) {
  pollfd fds[2] = {{channel.event_fd(), POLLIN, 0}, {peer.fd, PeerEvents(peer), 0}};
  ::poll(fds, peer.fd >= 0 ? 2 : 1, timeout_ms);
}

int JobWaiter::IdleMs(int64_t deadline_ms) const {
  if (deadline_ms <= 0) return kIdlePollMs;
  // The deadline passes once the clock is beyond it: wake 1 ms after it.
  const int64_t left = deadline_ms - clock_.NowMs() + 1;
  return static_cast<int>(std::clamp<int64_t>(left, 1, kIdlePollMs));
}

WaitResult JobWaiter::Wait(JobChannel& channel, const WaitOptions& o) const {
  while (true) {
    // Events first: a job that ended just as the peer left or the deadline passed still
    // counts as ended.
    while (auto event = channel.TryPop()) {
      if (event->type != JobEvent::Type::kText) return Finished(std::move(*event));
      if (o.on_text && !o.on_text(*event)) return Abandon(channel, WaitEnd::kStopped, o.drain_limit_ms);
    }
    if (PeerGone(o.peer)) return Abandon(channel, WaitEnd::kPeerGone, o.drain_limit_ms);
    if (o.deadline_ms > 0 && clock_.NowMs() > o.deadline_ms) {
      return Abandon(channel, WaitEnd::kTimedOut, o.drain_limit_ms);
    }
    idle_(channel, o.peer, IdleMs(o.deadline_ms));
  }
}

WaitResult JobWaiter::Abandon(JobChannel& channel, WaitEnd end, int64_t drain_limit_ms) const {
  channel.Cancel();
  const int64_t limit = clock_.NowMs() + drain_limit_ms;
  while (true) {
    while (auto event = channel.TryPop()) {
      if (event->type == JobEvent::Type::kText) continue;  // nobody reads it any more
      WaitResult r = Finished(std::move(*event));
      r.end = end;
      return r;
    }
    if (drain_limit_ms != WaitOptions::kDrainUntilEnd && clock_.NowMs() >= limit) break;
    idle_(channel, PeerWatch{}, kIdlePollMs);
  }
  Log(LogLevel::kWarn, "drain_timeout", {{"limit_ms", std::to_string(drain_limit_ms)}});
  WaitResult r;
  r.end = end;
  r.ended = false;
  return r;
}

}  // namespace llmd::sched
