// LogitAdjustments: what a request changes in the logits before a token is chosen — logit
// biases, then the repeat / frequency / presence penalties over the last 64 sampled tokens —
// with llama.cpp's arithmetic (llama_sampler_init_logit_bias and _penalties), applied by
// token id. llama.cpp's penalties sampler looks every vocabulary entry up in a hash map, 152k
// lookups a token on the Qwen vocabularies (~5 % of a decode step at 30 tok/s); here the cost
// is the few tokens in the window, so the seed's default repeat_penalty 1.1 costs nothing.
//
// Backend-neutral (no llama.cpp types): a backend calls Apply on a vocabulary-sized array in
// token-id order, and Accept with each sampled token. Copyable, so a caller can keep a
// snapshot and roll the window back.
#ifndef LLMD_ENGINE_LOGIT_ADJUSTMENTS_H_
#define LLMD_ENGINE_LOGIT_ADJUSTMENTS_H_

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/types.h"

namespace llmd::engine {

class LogitAdjustments {
 public:
  static constexpr int32_t kPenaltyWindow = 64;  // llama.cpp's penalty_last_n default

  // `extra_bias`: biases the backend adds (the end-of-generation tokens for ignore_eos).
  // Biases on the same token add up, as llama.cpp's logit-bias sampler does.
  LogitAdjustments(const SamplingParams& params, std::vector<std::pair<int32_t, float>> extra_bias = {});

  bool any() const { return penalties_on_ || !bias_.empty(); }

  // `logit(id)` must return a reference to token id's logit; ids outside 0..n_vocab-1 are
  // skipped. Cost: the biased tokens plus the distinct tokens in the window.
  template <typename LogitOf>
  void Apply(int32_t n_vocab, LogitOf&& logit) const {
    for (const auto& [token, bias] : bias_) {
      if (token >= 0 && token < n_vocab) logit(token) += bias;
    }
    if (!penalties_on_) return;
    for (const auto& [token, count] : counts_) {
      if (token < 0 || token >= n_vocab) continue;
      float& l = logit(token);
      // llama.cpp multiplies a non-positive logit so that the penalty always lowers it.
      l = l <= 0 ? l * repeat_ : l / repeat_;
      l -= static_cast<float>(count) * frequency_ + presence_;
    }
  }

  // Remembers a sampled token in the penalty window.
  void Accept(TokenId token);

 private:
  std::vector<std::pair<int32_t, float>> bias_;
  bool penalties_on_ = false;
  float repeat_ = 1.0f, frequency_ = 0.0f, presence_ = 0.0f;
  std::deque<TokenId> window_;
  std::unordered_map<TokenId, int32_t> counts_;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LOGIT_ADJUSTMENTS_H_
