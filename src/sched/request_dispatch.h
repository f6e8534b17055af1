// RequestDispatcher: the request runner's decisions. It resolves which loaded model (worker)
// serves a request and which judges it, submits the job, waits for it through a JobWaiter and
// runs the guard cascade (the answer is generated whole, judged by the guard model, then shown
// or refused). Waiting itself (deadline, peer, drain) is the JobWaiter's business.
//
// Every generation passes here, so here each request is counted in the ServerState's
// ClientLedger under its peer UID and class, and held to its class's token budget
// (class_token_budgets): refused before it is queued while its bucket is empty, charged its
// uncached prompt and generated tokens once it ends. Counting a prompt (count_only) is neither.
//
// Thread-safety: Dispatch may be called from any number of threads at once.
#ifndef LLMD_SCHED_REQUEST_DISPATCH_H_
#define LLMD_SCHED_REQUEST_DISPATCH_H_

#include <cstdint>
#include <string_view>

#include "sched/job_waiter.h"
#include "sched/run_request.h"
#include "sched/server_state.h"

namespace llmd::sched {

// The workers a request runs on, held (ServerState::Acquire) until the route is dropped: their
// models are not unloaded meanwhile.
struct ModelRoute {
  WorkerRef worker;  // generates the answer
  WorkerRef guard;   // judges it; set only for a guarded request
};

class RequestDispatcher {
 public:
  // `state` and `waiter` must outlive the dispatcher.
  RequestDispatcher(ServerState& state, const JobWaiter& waiter) : state_(state), waiter_(waiter) {}

  // Runs `request` to its one outcome.
  RunOutcome Dispatch(RunRequest request) const;

  // The workers for `request`, or why it cannot run: an unknown model (kUnknownModel), a
  // guarded request without a loaded guard_model, a stopping daemon (kShuttingDown), a model
  // still loading at the request's timeout or too big for the memory budget. A model that can
  // be served but is not loaded is loaded first (ServerState::Acquire).
  Result<ModelRoute> Resolve(const RunRequest& request) const;

 private:
  // Submits `job` to `worker` and waits for it under the request's peer and deadline,
  // forwarding its text when `forward`. kDone carries the job's completion. `step` names the
  // step in errors: "" for the answer, "guard" for the verdict.
  RunOutcome Await(EngineWorker& worker, Job job, const RunRequest& request, int64_t deadline, bool forward,
                   std::string_view step) const;
  // Judges `answer` with `guard`; shows it (one piece, when streaming) only if allowed.
  RunOutcome Guard(const RunRequest& request, EngineWorker& guard, bool stream, engine::Completion answer,
                   int64_t deadline) const;
  // A job's error, unless the daemon is stopping: then the error is that.
  Status StoppingOr(const Status& error) const;
  // Runs the answer on `route`, then the guard when asked.
  RunOutcome Run(const ModelRoute& route, RunRequest request) const;
  // The budget refusal of `client` while its bucket is empty; OK otherwise.
  Status CheckBudget(const ClientId& client) const;
  // Counts `outcome` in the ledger and charges its tokens to the budget of `client`.
  void Account(const ClientId& client, const RunOutcome& outcome) const;

  ServerState& state_;
  const JobWaiter& waiter_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_REQUEST_DISPATCH_H_
