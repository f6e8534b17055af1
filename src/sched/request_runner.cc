#include "sched/request_runner.h"

#include <poll.h>

#include "common/clock.h"
#include "common/log.h"
#include "sched/guard.h"

namespace llmd::sched {
namespace {

// A cancelled job ends at the engine's next step; a drain that takes longer than this means
// a stuck engine, which the watchdog handles. The channel is shared, so leaving is safe.
constexpr int64_t kDrainLimitMs = 30000;

int64_t NowMs() { return RealClock::Get().NowMs(); }

// Waits for a cancelled job's final event, so the engine is done with it.
void Drain(JobChannel& channel) {
  const int64_t limit = NowMs() + kDrainLimitMs;
  while (NowMs() < limit) {
    while (auto ev = channel.TryPop()) {
      if (ev->type != JobEvent::Type::kText) return;
    }
    channel.Wait(100);
  }
  Log(LogLevel::kWarn, "drain_timeout", {{"limit_ms", std::to_string(kDrainLimitMs)}});
}

bool PeerGone(const RunRequest& r) {
  if (r.peer_fd < 0) return false;
  pollfd p{r.peer_fd, static_cast<short>(r.half_close_is_gone ? POLLRDHUP : 0), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
}

}  // namespace

Status RequestRunner::StoppingOr(const Status& error) const { return state_.stopping() ? ShuttingDownError() : error; }

RequestRunner::WaitEnd RequestRunner::Await(JobChannel& channel, const RunRequest& r, int64_t deadline,
                                            bool forward, engine::Completion* out, Status* error) {
  while (true) {
    while (auto ev = channel.TryPop()) {
      switch (ev->type) {
        case JobEvent::Type::kText:
          if (forward && r.on_text && !r.on_text(*ev)) {
            channel.Cancel();
            Drain(channel);
            return WaitEnd::kPeerGone;
          }
          break;
        case JobEvent::Type::kError:
          *error = StoppingOr(ev->error);
          return WaitEnd::kError;
        case JobEvent::Type::kDone:
          *out = std::move(ev->completion);
          return WaitEnd::kDone;
      }
    }
    if (PeerGone(r)) {
      channel.Cancel();
      Drain(channel);
      return WaitEnd::kPeerGone;
    }
    if (deadline > 0 && NowMs() > deadline) {
      channel.Cancel();
      Drain(channel);
      return WaitEnd::kTimedOut;
    }
    pollfd fds[2] = {{channel.event_fd(), POLLIN, 0},
                     {r.peer_fd, static_cast<short>(r.half_close_is_gone ? POLLRDHUP : 0), 0}};
    ::poll(fds, r.peer_fd >= 0 ? 2 : 1, 100);
  }
}

RunOutcome RequestRunner::Run(RunRequest r) {
  RunOutcome outcome;
  EngineWorker* worker = state_.WorkerFor(r.model);
  if (worker == nullptr) {
    outcome.error = NotFoundError("unknown model '" + *r.model + "'; loaded: " + state_.ModelNames())
                        .WithReason(ErrorReason::kUnknownModel);
    return outcome;
  }
  const auto config = state_.config();
  if (r.guard && state_.WorkerFor(config->guard_model) == nullptr) {
    outcome.error = InvalidArgumentError("the guard cascade needs guard_model to name a loaded model");
    return outcome;
  }
  if (state_.stopping()) {
    outcome.error = ShuttingDownError();
    return outcome;
  }
  const int64_t deadline = r.timeout_ms > 0 ? NowMs() + r.timeout_ms : 0;
  auto channel = r.job.channel;
  const bool stream = r.job.stream;
  if (Status s = worker->Submit(std::move(r.job)); !s.ok()) {
    outcome.error = s;
    return outcome;
  }
  engine::Completion answer;
  Status error;
  // With the guard on, nothing is shown before its verdict.
  switch (Await(*channel, r, deadline, stream && !r.guard, &answer, &error)) {
    case WaitEnd::kPeerGone: outcome.kind = RunOutcome::Kind::kPeerGone; return outcome;
    case WaitEnd::kTimedOut:
      outcome.error = DeadlineExceededError("generation exceeded request_timeout_ms");
      return outcome;
    case WaitEnd::kError: outcome.error = error; return outcome;
    case WaitEnd::kDone: break;
  }
  if (answer.stats.finish_reason == engine::FinishReason::kCancelled && state_.stopping()) {
    outcome.error = ShuttingDownError();
    return outcome;
  }
  if (r.guard && answer.stats.finish_reason != engine::FinishReason::kCancelled) {
    return Guard(r, stream, std::move(answer), deadline);
  }
  outcome.kind = RunOutcome::Kind::kDone;
  outcome.completion = std::move(answer);
  return outcome;
}

// Runs the guard model on the exchange; shows the answer (one piece, when streaming) only if
// the verdict allows it.
RunOutcome RequestRunner::Guard(const RunRequest& r, bool stream, engine::Completion answer, int64_t deadline) {
  RunOutcome outcome;
  const int64_t start = NowMs();
  const auto config = state_.config();
  Job check = GuardJob(*config, r.guarded_prompt, answer.text);
  auto channel = check.channel;
  if (Status s = state_.WorkerFor(config->guard_model)->Submit(std::move(check)); !s.ok()) {
    outcome.error = s.WithContext("guard");
    return outcome;
  }
  engine::Completion verdict;
  Status error;
  switch (Await(*channel, r, deadline, false, &verdict, &error)) {
    case WaitEnd::kPeerGone: outcome.kind = RunOutcome::Kind::kPeerGone; return outcome;
    case WaitEnd::kTimedOut:
      outcome.error = DeadlineExceededError("the guard exceeded request_timeout_ms");
      return outcome;
    case WaitEnd::kError: outcome.error = error.WithContext("guard"); return outcome;
    case WaitEnd::kDone: break;
  }
  outcome.guard_ms = static_cast<double>(NowMs() - start);
  Log(LogLevel::kInfo, "guard_verdict", {{"api", r.api}, {"verdict", verdict.text},
                                         {"guard_ms", std::to_string(static_cast<long long>(outcome.guard_ms))}});
  const std::string refusal = GuardRefusal(verdict.text);
  if (!refusal.empty()) {
    answer.text.clear();
    outcome.completion = std::move(answer);
    outcome.error = InvalidArgumentError(refusal).WithReason(ErrorReason::kRefusedByGuard);
    return outcome;
  }
  if (stream && r.on_text && !answer.text.empty()) {
    JobEvent whole = JobEvent::Text(answer.text);
    whole.logprobs = answer.logprobs;
    whole.parser = answer.parser;
    if (!r.on_text(whole)) {
      outcome.kind = RunOutcome::Kind::kPeerGone;
      return outcome;
    }
  }
  outcome.kind = RunOutcome::Kind::kDone;
  outcome.completion = std::move(answer);
  return outcome;
}

}  // namespace llmd::sched
