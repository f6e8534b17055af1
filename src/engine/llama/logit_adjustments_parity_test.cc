// LogitAdjustments against llama.cpp's logit-bias and penalties samplers, which it replaces on
// the sampling path: the same logits, bit for bit, over random histories and logits.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/logit_adjustments.h"
#include "llama-cpp.h"
#include "llama.h"

namespace llmd::engine {
namespace {

TEST(LogitAdjustmentsParity, SameLogitsAsLlamaCppsSamplers) {
  constexpr int32_t kVocab = 4096;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> logit(-20.0f, 20.0f);
  std::uniform_int_distribution<int32_t> near_token(0, 80);  // a small range, so tokens repeat
  for (const float repeat : {1.0f, 1.1f, 1.7f}) {
    for (const float frequency : {0.0f, 0.3f, -0.5f}) {
      for (const float presence : {0.0f, 0.6f}) {
        SamplingParams p;
        p.repeat_penalty = repeat;
        p.frequency_penalty = frequency;
        p.presence_penalty = presence;
        p.logit_bias = {{3, 2.5f}, {17, -100.0f}, {3, 0.5f}};
        LogitAdjustments ours(p, {{kVocab - 1, -INFINITY}});
        std::vector<llama_logit_bias> biases = {{3, 2.5f}, {17, -100.0f}, {3, 0.5f}, {kVocab - 1, -INFINITY}};
        llama_sampler_ptr chain(llama_sampler_chain_init(llama_sampler_chain_default_params()));
        llama_sampler_chain_add(chain.get(), llama_sampler_init_logit_bias(kVocab, static_cast<int32_t>(biases.size()),
                                                                           biases.data()));
        llama_sampler_chain_add(chain.get(), llama_sampler_init_penalties(kVocab, LogitAdjustments::kPenaltyWindow, repeat,
                                                                          frequency, presence));
        for (int step = 0; step < 200; ++step) {
          std::vector<float> logits(kVocab);
          for (float& l : logits) l = logit(rng);
          std::vector<llama_token_data> theirs(kVocab);
          for (int32_t i = 0; i < kVocab; ++i) theirs[i] = {i, logits[i], 0.0f};
          llama_token_data_array array = {theirs.data(), theirs.size(), -1, false};
          llama_sampler_apply(chain.get(), &array);
          ours.Apply(kVocab, [&](int32_t id) -> float& { return logits[id]; });
          for (int32_t i = 0; i < kVocab; ++i) {
            ASSERT_EQ(logits[i], theirs[i].logit) << "token " << i << " step " << step << " repeat " << repeat
                                                  << " frequency " << frequency << " presence " << presence;
          }
          const TokenId sampled = near_token(rng);
          llama_sampler_accept(chain.get(), sampled);
          ours.Accept(sampled);
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmd::engine
