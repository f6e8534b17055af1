// LlamaSampler: a request's sampling state over llama.cpp's sampler chain, with the grammar
// kept apart (tried on the sampled token first, as common_sampler does) and log-probabilities
// from the raw logits. Engine thread only.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_SAMPLER_H_
#define LLMD_ENGINE_LLAMA_LLAMA_SAMPLER_H_

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/logit_adjustments.h"
#include "llama-cpp.h"
#include "llama.h"

namespace llmd::engine {

// LlamaEngine::KeepOutput's copy of one output's logits.
struct LlamaKeptOutput final : KeptOutput {
  std::vector<float> logits;  // n_vocab of them
};

// A copy of output `index`'s logits of `ctx`'s last decode; null where it has none.
inline std::shared_ptr<const KeptOutput> KeepLogits(llama_context* ctx, int32_t index) {
  const float* logits = llama_get_logits_ith(ctx, index);
  if (logits == nullptr) return nullptr;
  auto kept = std::make_shared<LlamaKeptOutput>();
  kept->logits.assign(logits, logits + llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx))));
  return kept;
}

class LlamaSampler final : public Sampler {
 public:
  // `chain` only chooses (greedy, or top-k/top-p/temperature/dist): the biases and penalties
  // are `adjust`'s, applied by token id first. `grammar` may be null; it is kept apart from
  // the chain so that most tokens cost one check of the sampled token instead of a pass over
  // the whole vocabulary.
  LlamaSampler(llama_sampler_ptr chain, llama_sampler_ptr grammar, LogitAdjustments adjust, llama_context* ctx,
               std::function<std::string(TokenId)> piece)
      : chain_(std::move(chain)),
        grammar_(std::move(grammar)),
        adjust_(std::move(adjust)),
        ctx_(ctx),
        n_vocab_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)))),
        piece_(std::move(piece)) {}

  // llama.cpp's rejection sampling with a grammar (common_sampler_sample): sample as if free;
  // keep the token when the grammar allows it, else mask the vocabulary by the grammar and
  // sample again.
  TokenId Sample(const Output& at) override {
    try {
      const float* logits = LogitsAt(at);
      if (logits == nullptr) return kNoToken;
      llama_token_data_array all = Candidates(logits);
      llama_sampler_apply(chain_.get(), &all);
      if (all.selected < 0) return kNoToken;
      TokenId token = all.data[all.selected].id;
      if (grammar_ && !GrammarAllows(token)) {
        all = Candidates(logits);
        llama_sampler_apply(grammar_.get(), &all);
        llama_sampler_apply(chain_.get(), &all);
        if (all.selected < 0 || all.data[all.selected].logit == -INFINITY) return kNoToken;
        token = all.data[all.selected].id;
      }
      if (grammar_) llama_sampler_accept(grammar_.get(), token);
      llama_sampler_accept(chain_.get(), token);
      adjust_.Accept(token);
      return token;
    } catch (const std::exception&) {
      return kNoToken;  // the grammar rejected every token (llama.cpp throws on its accept)
    }
  }

  // Log-softmax over the raw logits: the model's own distribution, as OpenAI reports it.
  TokenLogprob Logprob(const Output& at, TokenId token, int32_t top) override {
    const float* logits = LogitsAt(at);
    const int32_t n = n_vocab_;
    TokenLogprob out;
    out.text = piece_(token);
    if (logits == nullptr) return out;
    float max = logits[0];
    for (int32_t i = 1; i < n; ++i) max = std::max(max, logits[i]);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
    const float log_z = max + static_cast<float>(std::log(sum));
    out.logprob = logits[token] - log_z;
    if (top <= 0) return out;
    std::vector<std::pair<float, TokenId>> best;  // a min-heap of the `top` largest logits
    auto greater = [](const auto& a, const auto& b) { return a.first > b.first; };
    for (int32_t i = 0; i < n; ++i) {
      if (static_cast<int32_t>(best.size()) < top) {
        best.emplace_back(logits[i], i);
        std::push_heap(best.begin(), best.end(), greater);
      } else if (logits[i] > best.front().first) {
        std::pop_heap(best.begin(), best.end(), greater);
        best.back() = {logits[i], i};
        std::push_heap(best.begin(), best.end(), greater);
      }
    }
    std::sort_heap(best.begin(), best.end(), greater);  // largest first
    for (const auto& [logit, id] : best) out.top.emplace_back(piece_(id), logit - log_z);
    return out;
  }

 private:
  const float* LogitsAt(const Output& at) const {
    if (at.kept == nullptr) return llama_get_logits_ith(ctx_, at.index);
    const auto* kept = dynamic_cast<const LlamaKeptOutput*>(at.kept);
    return kept != nullptr && kept->logits.size() == static_cast<size_t>(n_vocab_) ? kept->logits.data() : nullptr;
  }

  // The vocabulary in id order with the request's biases and penalties applied.
  llama_token_data_array Candidates(const float* logits) {
    candidates_.resize(static_cast<size_t>(n_vocab_));
    for (int32_t i = 0; i < n_vocab_; ++i) candidates_[i] = {i, logits[i], 0.0f};
    adjust_.Apply(n_vocab_, [this](int32_t id) -> float& { return candidates_[id].logit; });
    return llama_token_data_array{candidates_.data(), candidates_.size(), -1, false};
  }

  bool GrammarAllows(TokenId token) {
    llama_token_data one = {token, 1.0f, 0.0f};
    llama_token_data_array single = {&one, 1, -1, false};
    llama_sampler_apply(grammar_.get(), &single);
    return single.data[0].logit != -INFINITY;
  }

  llama_sampler_ptr chain_;
  llama_sampler_ptr grammar_;
  LogitAdjustments adjust_;
  llama_context* ctx_;
  int32_t n_vocab_;
  std::function<std::string(TokenId)> piece_;
  std::vector<llama_token_data> candidates_;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_SAMPLER_H_
