// RequestRunner: the one way a front end runs a generation. It resolves the model, submits
// the job, runs the guard cascade when asked, waits with a deadline while watching the peer
// for a hang-up, drains a cancelled job for a bounded time, and returns one typed outcome.
// Front ends (native socket, OpenAI, Ollama, Anthropic ...) only translate their wire format
// into a RunRequest and the text and outcome back; none of them waits on a job itself.
//
// The work is split in two: RequestDispatcher (request_dispatch.h) decides which workers serve
// the request and runs the guard cascade; JobWaiter (job_waiter.h) waits on each job's
// channel. The runner keeps the front ends' one-line call: RequestRunner(state).Run(request).
//
// Thread-safety: Run may be called from any number of threads at once.
#ifndef LLMD_SCHED_REQUEST_RUNNER_H_
#define LLMD_SCHED_REQUEST_RUNNER_H_

#include <string_view>  // kept for the front ends that had it from here
#include <utility>

#include "sched/job_waiter.h"
#include "sched/run_request.h"
#include "sched/server_state.h"

namespace llmd::sched {

class RequestRunner {
 public:
  // `state` (and the waiter's clock) must outlive the runner.
  explicit RequestRunner(ServerState& state, JobWaiter waiter = JobWaiter()) : state_(state), waiter_(std::move(waiter)) {}

  RunOutcome Run(RunRequest request);

 private:
  ServerState& state_;
  JobWaiter waiter_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_REQUEST_RUNNER_H_
