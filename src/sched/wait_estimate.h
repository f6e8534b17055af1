// WaitEstimate: how long a new job is expected to wait for its first token, from what the
// worker measured (the time a job holds a slot, the prefill cost of a prompt token) and what
// is ahead of it (the busy slots and queued jobs of its class and higher). A first-token
// deadline the estimate says cannot be met is refused at once, with the expected wait: better
// than a timeout after the fact.
//
// Until the worker has measured a finished request it knows nothing, and refuses nothing.
#ifndef LLMD_SCHED_WAIT_ESTIMATE_H_
#define LLMD_SCHED_WAIT_ESTIMATE_H_

#include <cstddef>
#include <cstdint>

#include "sched/job.h"

namespace llmd::sched {

struct WaitEstimate {
  bool known = false;    // measured costs exist
  size_t ahead = 0;      // jobs of its class or higher, busy or queued, before it
  int64_t queue_ms = 0;  // until it gets a slot
  int64_t prefill_ms = 0;
  int64_t first_token_ms() const { return queue_ms + prefill_ms; }
};

// What the worker measured, as running means (milliseconds); 0: not yet measured.
struct MeasuredCosts {
  double slot_hold_ms = 0;        // a job's time on a slot, admission to end
  double prefill_ms_per_token = 0;
};

// `busy`: slots of the job's class or higher now busy; `queued`: jobs of its class or higher
// waiting; `width`: slots that run at once.
WaitEstimate EstimateWait(const MeasuredCosts& costs, size_t busy, size_t queued, size_t width,
                          size_t prompt_tokens);

// A rough count of a job's prompt tokens before it is tokenized (about 4 bytes a token): what
// a deadline is judged by at submission. A session turn counts only its new text.
size_t RoughPromptTokens(const PromptSource& prompt);

// The refusal of a job whose deadline the estimate says it misses.
Status DeadlineUnmeetableError(const WaitEstimate& estimate, int64_t deadline_ms);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_WAIT_ESTIMATE_H_
