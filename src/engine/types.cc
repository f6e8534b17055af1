#include "engine/types.h"

#include <cmath>

namespace llmd::engine {

SamplingParams SamplingParams::Greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = 1;
  p.repeat_penalty = 1.0f;
  return p;
}

Status SamplingParams::Validate() const {
  auto in = [](float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; };
  if (!in(temperature, 0.0f, 2.0f)) return InvalidArgumentError("temperature must be in [0, 2]");
  if (!in(top_p, 0.0f, 1.0f)) return InvalidArgumentError("top_p must be in [0, 1]");
  if (top_k <= 0) return InvalidArgumentError("top_k must be > 0");
  if (!std::isfinite(repeat_penalty) || repeat_penalty < 1.0f) {
    return InvalidArgumentError("repeat_penalty must be >= 1");
  }
  if (!in(presence_penalty, -2.0f, 2.0f)) return InvalidArgumentError("presence_penalty must be in [-2, 2]");
  if (!in(frequency_penalty, -2.0f, 2.0f)) return InvalidArgumentError("frequency_penalty must be in [-2, 2]");
  if (top_logprobs < -1 || top_logprobs > 20) return InvalidArgumentError("top_logprobs must be in [0, 20]");
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || !in(bias, -100.0f, 100.0f)) {
      return InvalidArgumentError("logit_bias maps token ids (>= 0) to values in [-100, 100]");
    }
  }
  if (grammar_lazy && grammar_trigger_patterns.empty() && grammar_trigger_tokens.empty()) {
    return InvalidArgumentError("a lazy grammar needs a trigger");
  }
  return Status::Ok();
}

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

double GenerationStats::decode_tokens_per_second() const {
  // The first token comes from the prefill; the rest each cost one decode step.
  return generated_tokens > 1 && decode_ms > 0 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
}

double GenerationStats::prefill_tokens_per_second() const {
  int32_t fresh = prompt_tokens - cached_tokens;
  return fresh > 0 && prefill_ms > 0 ? fresh * 1000.0 / prefill_ms : 0;
}

}  // namespace llmd::engine
