// RunRequest and RunOutcome: what a front end hands the request runner and what it gets back.
// Front ends (native socket, OpenAI, Ollama, Anthropic ...) only translate their wire format
// into a RunRequest and the text and outcome back; none of them waits on a job itself.
#ifndef LLMD_SCHED_RUN_REQUEST_H_
#define LLMD_SCHED_RUN_REQUEST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sched/job.h"

namespace llmd::sched {

struct RunRequest {
  // The front end, for log lines (guard_verdict): one of a fixed set, never from the request:
  // "native", "openai" (chat, completions, embeddings), "responses", "anthropic", "ollama".
  std::string api;
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
  // kDone: the answer. Otherwise, when the job ran: what it had done when it ended (a refusal's
  // stats; a cancelled job's, which the token budget charges); front ends show it only for a
  // refusal, and that without its text.
  engine::Completion completion;
  Status error;
  double guard_ms = 0;  // time spent in the guard cascade
  // The error is the guard's refusal (reason kRefusedByGuard): nothing of the answer was
  // shown. `completion` is the refused answer's stats, its text cleared.
  bool refused() const { return error.reason() == ErrorReason::kRefusedByGuard; }
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_RUN_REQUEST_H_
