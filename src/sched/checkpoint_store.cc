#include "sched/checkpoint_store.h"

#include <algorithm>

#include "sched/prefill_cuts.h"

namespace llmd::sched {

void CheckpointStore::Put(std::vector<engine::TokenId> tokens, std::string state) {
  if (state.size() > budget_bytes_) return;
  std::erase_if(entries_, [&](const Checkpoint& c) { return c.tokens == tokens; });
  entries_.push_back({std::move(tokens), std::move(state), ++use_clock_});
  Evict();
}

void CheckpointStore::Evict() {
  uint64_t total = 0;
  for (const auto& c : entries_) total += c.state.size();
  while (total > budget_bytes_ && !entries_.empty()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Checkpoint& a, const Checkpoint& b) { return a.last_used < b.last_used; });
    total -= oldest->state.size();
    entries_.erase(oldest);
  }
  count_ = entries_.size();
  bytes_ = total;
}

const Checkpoint* CheckpointStore::Find(const std::vector<engine::TokenId>& prompt, size_t limit,
                                        const std::vector<size_t>* cuts) const {
  const Checkpoint* best = nullptr;
  for (const auto& c : entries_) {
    if (c.tokens.size() > limit || c.tokens.size() > prompt.size()) continue;
    if (cuts != nullptr && !IsCut(*cuts, c.tokens.size())) continue;
    if (best != nullptr && c.tokens.size() <= best->tokens.size()) continue;
    if (std::equal(c.tokens.begin(), c.tokens.end(), prompt.begin())) best = &c;
  }
  return best;
}

void CheckpointStore::CountHit(const Checkpoint* used) {
  ++hits_;
  for (auto& c : entries_) {
    if (&c == used) c.last_used = ++use_clock_;
  }
}

void CheckpointStore::Clear() {
  entries_.clear();
  count_ = 0;
  bytes_ = 0;
}

}  // namespace llmd::sched
