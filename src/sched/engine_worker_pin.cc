// EngineWorker's pinned prefixes: system prompts the config names, prefilled when the worker
// takes an engine and kept in host memory for its life (Engine::ParkSequence: the KV cells
// and, on a hybrid model, the recurrent state after them). They are outside the checkpoint
// store's LRU and outside the sequences, so neither eviction nor an idle release drops them;
// a request whose prompt begins with one starts from it (PlanReuse), so the voice pipeline's
// system prompt is always warm.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"
#include "sched/prefill_cuts.h"

namespace llmd::sched {

namespace {

// The largest length <= `limit` at which a message starts (`message_start` at that index),
// or `limit` itself when the model has no message start token.
size_t LastMessageStart(const std::vector<engine::TokenId>& prompt, engine::TokenId message_start, size_t limit) {
  if (message_start < 0) return limit;
  for (size_t i = limit; i > 0; --i) {
    if (prompt[i] == message_start) return i;
  }
  return 0;
}

}  // namespace

void EngineWorker::PinPrompts() {
  pinned_.clear();
  pinned_bytes_ = 0;
  if (options_.pinned_system_prompts.empty() || engine_->model_info().embeddings) return;
  for (const std::string& system : options_.pinned_system_prompts) {
    Result<PinnedPrefix> pinned = PinPrompt(system);
    if (!pinned.has_value()) {
      Log(LogLevel::kWarn, "prompt_not_pinned", {{"error", pinned.error().ToString()}});
      continue;
    }
    Log(LogLevel::kInfo, "prompt_pinned", {{"tokens", std::to_string(pinned->tokens.size())},
                                          {"bytes", std::to_string(pinned->state.size())}});
    pinned_bytes_ += pinned->state.size();
    pinned_.push_back(std::move(*pinned));
  }
  pinned_count_ = static_cast<uint32_t>(pinned_.size());
}

// The part every chat with this system prompt shares, up to the start of the next message,
// prefilled on sequence 0 as a cold prompt would be (at its prefill cuts) and parked.
Result<EngineWorker::PinnedPrefix> EngineWorker::PinPrompt(const std::string& system) {
  auto a = engine_->ChatPrompt(system, "a", true);
  auto b = engine_->ChatPrompt(system, "b", true);
  if (!a.has_value()) return a.error();
  if (!b.has_value()) return b.error();
  const auto differ = std::mismatch(a->begin(), a->end(), b->begin(), b->end()).first;
  const size_t common = std::min(static_cast<size_t>(differ - a->begin()), a->size() - 1);
  size_t length = LastMessageStart(*a, engine_->MessageStartToken(), common);
  const std::vector<size_t> cuts = PromptCuts(*a);
  if (ShapeMatters()) {
    // A state the cold prefill of a longer prompt passes through: at one of its cuts.
    const auto below = std::upper_bound(cuts.begin(), cuts.end(), length);
    length = below == cuts.begin() ? 0 : *std::prev(below);
  }
  if (length == 0) return InvalidArgumentError("the system prompt gives no prefix to pin");
  const int32_t sequence = slots_.front()->sequence;
  LLMD_RETURN_IF_ERROR(engine_->TruncateSequence(sequence, 0));
  size_t at = 0;
  while (at < length) {
    size_t end = std::min(length, at + static_cast<size_t>(options_.batch_tokens));
    if (const auto cut = std::upper_bound(cuts.begin(), cuts.end(), at); cut != cuts.end()) end = std::min(end, *cut);
    if (const auto piece = static_cast<size_t>(engine_->model_info().memory.prompt_call_tokens); piece > 0) {
      end = std::min(end, (at / piece + 1) * piece);  // a prompt call stays in one piece
    }
    std::vector<engine::DecodeItem> chunk;
    for (size_t i = at; i < end; ++i) chunk.push_back({sequence, static_cast<int32_t>(i), (*a)[i], false, static_cast<int32_t>(a->size())});
    LLMD_RETURN_IF_ERROR(engine_->DecodeBatch(chunk));
    at = end;
  }
  Result<std::string> state = engine_->ParkSequence(sequence);
  if (!state.has_value()) {
    (void)engine_->TruncateSequence(sequence, 0);
    return state.error();
  }
  return PinnedPrefix{{a->begin(), a->begin() + static_cast<ptrdiff_t>(length)}, std::move(*state), a->size()};
}

// A pinned prefix the prompt begins with, longer than `keep`, that its prefill passes through.
const EngineWorker::PinnedPrefix* EngineWorker::PinnedFor(const std::vector<engine::TokenId>& prompt,
                                                           const std::vector<size_t>* cuts, size_t keep) const {
  const PinnedPrefix* best = nullptr;
  for (const PinnedPrefix& p : pinned_) {
    const size_t n = p.tokens.size();
    if (n <= keep || n >= prompt.size() || (best != nullptr && n <= best->tokens.size())) continue;
    if (!std::equal(p.tokens.begin(), p.tokens.end(), prompt.begin())) continue;
    if (cuts != nullptr && !IsCut(*cuts, n)) continue;
    if (AlikePrefix(p.computed_for, prompt.size(), n) < n) continue;
    best = &p;
  }
  return best;
}

}  // namespace llmd::sched
