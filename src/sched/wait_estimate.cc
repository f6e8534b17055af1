#include "sched/wait_estimate.h"

#include <cmath>
#include <string>
#include <type_traits>

namespace llmd::sched {

WaitEstimate EstimateWait(const MeasuredCosts& costs, size_t busy, size_t queued, size_t width,
                          size_t prompt_tokens) {
  WaitEstimate e;
  e.known = costs.slot_hold_ms > 0 && costs.prefill_ms_per_token > 0;
  e.ahead = busy + queued;
  if (!e.known || width == 0) return e;
  // Each round of `width` jobs ahead frees its slots after about one hold time.
  if (e.ahead >= width) {
    const size_t rounds = (e.ahead - width) / width + 1;
    e.queue_ms = static_cast<int64_t>(std::ceil(static_cast<double>(rounds) * costs.slot_hold_ms));
  }
  e.prefill_ms = static_cast<int64_t>(std::ceil(static_cast<double>(prompt_tokens) * costs.prefill_ms_per_token));
  return e;
}

size_t RoughPromptTokens(const PromptSource& prompt) {
  const size_t bytes = std::visit(
      [](const auto& p) -> size_t {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, OneShotChat>) {
          return p.system.size() + p.user.size();
        } else if constexpr (std::is_same_v<T, SessionTurn>) {
          return p.user.size();
        } else if constexpr (std::is_same_v<T, Conversation>) {
          size_t n = 0;
          for (const auto& m : p.messages) n += m.content.size();
          return n;
        } else if constexpr (std::is_same_v<T, RawCompletion>) {
          return p.prompt.size();
        } else {
          return 0;
        }
      },
      prompt);
  return bytes / 4 + 1;
}

Status DeadlineUnmeetableError(const WaitEstimate& e, int64_t deadline_ms) {
  return ResourceExhaustedError("the first token is expected in about " + std::to_string(e.first_token_ms()) +
                                " ms (" + std::to_string(e.ahead) + " requests ahead), after the deadline of " +
                                std::to_string(deadline_ms) + " ms; retry later or with a later deadline")
      .WithReason(ErrorReason::kDeadlineUnmeetable);
}

}  // namespace llmd::sched
