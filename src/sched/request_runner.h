// RequestRunner: the one way a front end runs a generation. It resolves the model, submits
// the job, runs the guard cascade when asked, waits with a deadline while watching the peer
// for a hang-up, drains a cancelled job for a bounded time, and returns one typed outcome.
// Front ends (native socket, OpenAI, Ollama, Anthropic ...) only translate their wire format
// into a RunRequest and the text and outcome back; none of them waits on a job itself.
//
// Thread-safety: Run may be called from any number of threads at once.
#ifndef LLMD_SCHED_REQUEST_RUNNER_H_
#define LLMD_SCHED_REQUEST_RUNNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sched/job.h"
#include "sched/server_state.h"

namespace llmd::sched {

struct RunRequest {
  std::string api;  // the front end, for log lines: "native", "http", ...
  Job job;
  std::optional<std::string> model;  // none: the default model
  // Run the guard cascade: the answer is generated whole, judged by guard_model, and shown
  // only if allowed (streamed text then arrives as one piece after the verdict).
  bool guard = false;
  std::string guarded_prompt;        // the user's side of the exchange, as the guard sees it
  int peer_fd = -1;                  // watched for a hang-up while waiting; -1: none
  bool half_close_is_gone = false;   // a peer that shut down its writing side is gone too
  int64_t timeout_ms = 0;            // from now, for generation and guard together; 0: none
  // Receives each streamed kText event (only when job.stream): its text, log-probabilities
  // and the reply's parser. Returns false when the peer cannot take it (stopped reading,
  // left): the job is then cancelled.
  std::function<bool(const JobEvent&)> on_text;
};

struct RunOutcome {
  enum class Kind {
    kDone,      // `completion` is the answer
    kError,     // `error` says why; `completion` holds what was generated if any (a refusal)
    kPeerGone,  // the peer left or stopped reading; the job was cancelled and drained
  };
  Kind kind = Kind::kError;
  engine::Completion completion;
  Status error;
  double guard_ms = 0;  // time spent in the guard cascade
  // The error is the guard's refusal (reason kRefusedByGuard): nothing of the answer was
  // shown. `completion` is the refused answer's stats, its text cleared.
  bool refused() const { return error.reason() == ErrorReason::kRefusedByGuard; }
};

class RequestRunner {
 public:
  // `state` must outlive the runner.
  explicit RequestRunner(ServerState& state) : state_(state) {}

  RunOutcome Run(RunRequest request);

 private:
  enum class WaitEnd { kDone, kError, kPeerGone, kTimedOut };
  WaitEnd Await(JobChannel& channel, const RunRequest& request, int64_t deadline, bool forward,
                engine::Completion* out, Status* error);
  // `stream`: the job streamed (the job itself was moved into the worker).
  RunOutcome Guard(const RunRequest& request, bool stream, engine::Completion answer, int64_t deadline);
  Status StoppingOr(const Status& error) const;

  ServerState& state_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_REQUEST_RUNNER_H_
