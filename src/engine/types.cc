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

std::string_view SpeculativeModeName(SpeculativeMode mode) {
  switch (mode) {
    case SpeculativeMode::kOff: return "off";
    case SpeculativeMode::kNgram: return "ngram";
    case SpeculativeMode::kDraft: return "draft";
    case SpeculativeMode::kMtp: return "mtp";
  }
  return "unknown";
}

Result<SpeculativeMode> ParseSpeculativeMode(std::string_view name) {
  for (SpeculativeMode m : {SpeculativeMode::kOff, SpeculativeMode::kNgram, SpeculativeMode::kDraft,
                            SpeculativeMode::kMtp}) {
    if (name == SpeculativeModeName(m)) return m;
  }
  return InvalidArgumentError("speculative '" + std::string(name) + "' is not one of off, ngram, draft, mtp");
}

Status SpeculativeConfig::Validate() const {
  if (mode == SpeculativeMode::kOff) return Status::Ok();
  if (draft_max < 1 || draft_max > 32) return InvalidArgumentError("draft_max must be in [1, 32]");
  if (draft_min < 0 || draft_min > draft_max) return InvalidArgumentError("draft_min must be in [0, draft_max]");
  if (!std::isfinite(draft_p_min) || draft_p_min < 0 || draft_p_min > 1) {
    return InvalidArgumentError("draft_p_min must be in [0, 1]");
  }
  if (mode == SpeculativeMode::kDraft && draft_model_path.empty()) {
    return InvalidArgumentError("speculative = draft needs draft_model");
  }
  if (mode == SpeculativeMode::kNgram) {
    if (ngram_kind != "simple" && ngram_kind != "map-k" && ngram_kind != "map-k4v" && ngram_kind != "mod") {
      return InvalidArgumentError("ngram_kind '" + ngram_kind + "' is not one of simple, map-k, map-k4v, mod");
    }
    if (ngram_size_n < 1 || ngram_size_n > 1024) return InvalidArgumentError("ngram_size_n must be in [1, 1024]");
    if (ngram_size_m < 1 || ngram_size_m > 1024) return InvalidArgumentError("ngram_size_m must be in [1, 1024]");
  }
  if (synthetic_acceptance_length != 0 &&
      (!std::isfinite(synthetic_acceptance_length) || synthetic_acceptance_length < 1 ||
       synthetic_acceptance_length > draft_max + 1.0)) {
    return InvalidArgumentError("the synthetic acceptance length must be in [1, draft_max + 1]");
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
