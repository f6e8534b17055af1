#include "sched/request_dispatch.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/log.h"
#include "sched/guard.h"

namespace llmd::sched {
namespace {

RunOutcome Failed(Status error) {
  RunOutcome outcome;
  outcome.error = std::move(error);
  return outcome;
}

// Which refusal a ResourceExhausted error is, for a job that never ran.
Refusal RefusalOf(const Status& error) {
  switch (error.reason()) {
    case ErrorReason::kBudgetExhausted: return Refusal::kBudget;
    case ErrorReason::kQueueFull: return Refusal::kQueueFull;
    case ErrorReason::kDeadlineUnmeetable: return Refusal::kDeadline;
    default: return Refusal::kBusy;
  }
}

// `error` prefixed with the step it happened in ("guard: ..."), if any.
Status InStep(const Status& error, std::string_view step) { return step.empty() ? error : error.WithContext(step); }

// Sends the allowed answer as one text event, as a streaming peer expects it. False: the peer
// could not take it.
bool ShowWhole(const RunRequest& r, const engine::Completion& answer) {
  if (!r.on_text || answer.text.empty()) return true;
  JobEvent whole = JobEvent::Text(answer.text);
  whole.logprobs = answer.logprobs;
  whole.parser = answer.parser;
  return r.on_text(whole);
}

}  // namespace

Status RequestDispatcher::StoppingOr(const Status& error) const {
  return state_.stopping() ? ShuttingDownError() : error;
}

Result<ModelRoute> RequestDispatcher::Resolve(const RunRequest& r) const {
  ModelRoute route;
  if (state_.stopping()) return ShuttingDownError();
  LLMD_ASSIGN_OR_RETURN(route.worker, state_.Acquire(r.model, r.timeout_ms, r.job.keep_alive_ms));
  if (r.guard) {
    const std::string guard_model = state_.config()->guard_model;
    auto guard = guard_model.empty() ? Result<WorkerRef>(WorkerRef())
                                     : state_.Acquire(guard_model, r.timeout_ms, std::nullopt);
    if (!guard.has_value() || *guard == nullptr) {
      return InvalidArgumentError("the guard cascade needs guard_model to name a loaded model");
    }
    route.guard = *guard;
  }
  if (state_.stopping()) return ShuttingDownError();
  return route;
}

RunOutcome RequestDispatcher::Dispatch(RunRequest r) const {
  auto route = Resolve(r);
  if (!route) return Failed(route.error());
  if (r.job.count_only) return Run(*route, std::move(r));  // no generation: neither counted nor charged
  const ClientId who{r.job.peer_uid, r.job.request_class};
  state_.clients().CountRequest(who);
  if (Status spent = CheckBudget(who); !spent.ok()) {
    state_.clients().CountRefusal(who, Refusal::kBudget);
    return Failed(std::move(spent));
  }
  RunOutcome outcome = Run(*route, std::move(r));
  Account(who, outcome);
  return outcome;
}

RunOutcome RequestDispatcher::Run(const ModelRoute& route, RunRequest r) const {
  const int64_t deadline = r.timeout_ms > 0 ? waiter_.clock().NowMs() + r.timeout_ms : 0;
  const bool stream = r.job.stream;
  Job job = std::move(r.job);
  // With the guard on, nothing is shown before its verdict.
  RunOutcome answer = Await(*route.worker, std::move(job), r, deadline, stream && !r.guard, "");
  if (answer.kind != RunOutcome::Kind::kDone) return answer;
  const bool cancelled = answer.completion.stats.finish_reason == engine::FinishReason::kCancelled;
  if (cancelled && state_.stopping()) return Failed(ShuttingDownError());
  if (r.guard && !cancelled) return Guard(r, *route.guard, stream, std::move(answer.completion), deadline);
  return answer;
}

Status RequestDispatcher::CheckBudget(const ClientId& client) const {
  const uint32_t per_minute = state_.config()->class_token_budgets[ClassIndex(client.request_class)];
  const int64_t wait_ms = state_.token_budgets().RetryAfterMs(client, per_minute, waiter_.clock().NowMs());
  if (wait_ms == 0) return Status::Ok();
  return BudgetExhaustedError(client, per_minute, wait_ms);
}

void RequestDispatcher::Account(const ClientId& client, const RunOutcome& outcome) const {
  ClientLedger& ledger = state_.clients();
  const engine::GenerationStats& st = outcome.completion.stats;
  // Every prompt has a token: a completion without one is none the engine reported.
  if (st.prompt_tokens <= 0) {
    if (outcome.kind == RunOutcome::Kind::kError && outcome.error.code() == StatusCode::kResourceExhausted) {
      ledger.CountRefusal(client, RefusalOf(outcome.error));
    }
    return;
  }
  ledger.CountRun(client, st);
  const uint64_t cost = static_cast<uint64_t>(std::max(0, st.prompt_tokens - st.cached_tokens)) +
                        static_cast<uint64_t>(std::max(0, st.generated_tokens));
  const uint32_t per_minute = state_.config()->class_token_budgets[ClassIndex(client.request_class)];
  state_.token_budgets().Charge(client, cost, per_minute, waiter_.clock().NowMs());
}

RunOutcome RequestDispatcher::Await(EngineWorker& worker, Job job, const RunRequest& r, int64_t deadline,
                                    bool forward, std::string_view step) const {
  auto channel = job.channel;
  if (Status s = worker.Submit(std::move(job)); !s.ok()) return Failed(InStep(s, step));
  WaitOptions wait;
  wait.deadline_ms = deadline;
  wait.peer = {r.peer_fd, r.half_close_is_gone};
  if (forward) wait.on_text = r.on_text;
  WaitResult result = waiter_.Wait(*channel, wait);
  RunOutcome outcome;
  // kDone: the answer. Given up on: what the cancelled job had done when it ended, if it did
  // (its tokens were spent all the same, and are charged).
  outcome.completion = std::move(result.completion);
  switch (result.end) {
    case WaitEnd::kDone:
      outcome.kind = RunOutcome::Kind::kDone;
      break;
    case WaitEnd::kStopped:  // the peer stopped reading: as good as gone
    case WaitEnd::kPeerGone: outcome.kind = RunOutcome::Kind::kPeerGone; break;
    case WaitEnd::kTimedOut: {
      const std::string what = step.empty() ? "generation" : "the " + std::string(step);
      outcome.error = DeadlineExceededError(what + " exceeded request_timeout_ms");
      break;
    }
    case WaitEnd::kError: outcome.error = InStep(StoppingOr(result.error), step); break;
  }
  return outcome;
}

RunOutcome RequestDispatcher::Guard(const RunRequest& r, EngineWorker& guard, bool stream, engine::Completion answer,
                                    int64_t deadline) const {
  const int64_t start = waiter_.clock().NowMs();
  Job check = GuardJob(*state_.config(), r.guarded_prompt, answer.text);
  // The check is part of the answer: it runs in the answer's class, for the same peer.
  check.request_class = r.job.request_class;
  check.peer_uid = r.job.peer_uid;
  RunOutcome verdict = Await(guard, std::move(check), r, deadline, false, "guard");
  if (verdict.kind != RunOutcome::Kind::kDone) {
    verdict.completion = std::move(answer);  // what the request cost is the answer's, not the check's
    verdict.completion.text.clear();         // never shown without a verdict
    return verdict;
  }
  RunOutcome outcome;
  outcome.guard_ms = static_cast<double>(waiter_.clock().NowMs() - start);
  Log(LogLevel::kInfo, "guard_verdict", {{"api", r.api}, {"verdict", verdict.completion.text},
                                         {"guard_ms", std::to_string(static_cast<long long>(outcome.guard_ms))}});
  const std::string refusal = GuardRefusal(verdict.completion.text);
  if (!refusal.empty()) {
    answer.text.clear();
    outcome.completion = std::move(answer);
    outcome.error = InvalidArgumentError(refusal).WithReason(ErrorReason::kRefusedByGuard);
    return outcome;
  }
  if (stream && !ShowWhole(r, answer)) {
    outcome.kind = RunOutcome::Kind::kPeerGone;
    return outcome;
  }
  outcome.kind = RunOutcome::Kind::kDone;
  outcome.completion = std::move(answer);
  return outcome;
}

}  // namespace llmd::sched
