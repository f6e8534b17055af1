#include "engine/logit_adjustments.h"

namespace llmd::engine {

LogitAdjustments::LogitAdjustments(const SamplingParams& params, std::vector<std::pair<int32_t, float>> extra_bias)
    : bias_(params.logit_bias),
      penalties_on_(params.repeat_penalty != 1.0f || params.frequency_penalty != 0.0f ||
                    params.presence_penalty != 0.0f),
      repeat_(params.repeat_penalty),
      frequency_(params.frequency_penalty),
      presence_(params.presence_penalty) {
  bias_.insert(bias_.end(), extra_bias.begin(), extra_bias.end());
}

void LogitAdjustments::Accept(TokenId token) {
  if (!penalties_on_) return;
  ++counts_[token];
  if (window_.size() >= static_cast<size_t>(kPenaltyWindow)) {
    const TokenId old = window_.front();
    window_.pop_front();
    if (--counts_[old] == 0) counts_.erase(old);
  }
  window_.push_back(token);
}

}  // namespace llmd::engine
