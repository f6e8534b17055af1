// CheckpointStore: saved recurrent states of prompt prefixes, shared by every slot of one
// model. On hybrid memory (Gated DeltaNet + attention) a sequence cannot be cut back to a
// common prefix, so prefix reuse restores the recurrent state saved after that prefix and
// trims only the attention part. A checkpoint made while one slot prefilled serves a request
// landing on any slot: the attention part comes from whichever sequence holds the prefix.
//
// Bounded by bytes, least recently used first out. Thread-safety: engine thread only, except
// the counters, which any thread may read.
#ifndef LLMD_SCHED_CHECKPOINT_STORE_H_
#define LLMD_SCHED_CHECKPOINT_STORE_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "engine/types.h"

namespace llmd::sched {

struct Checkpoint {
  std::vector<engine::TokenId> tokens;  // the prefix; the state is the one after all of them
  std::string state;                    // Engine::SaveSequenceState bytes
  uint64_t last_used = 0;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(uint64_t budget_bytes) : budget_bytes_(budget_bytes) {}

  // Keeps `state` as the state after `tokens`, replacing one for the same tokens, and drops
  // the least recently used checkpoints beyond the budget. A state larger than the whole
  // budget is not kept.
  void Put(std::vector<engine::TokenId> tokens, std::string state);

  // The longest checkpoint whose tokens are a prefix of `prompt`, at most `limit` long and,
  // when `cuts` is given, one of the prompt's prefill cuts (PrefillCuts: where its own cold
  // prefill passes through the same state), or null. The pointer is valid until the next Put
  // or Clear.
  const Checkpoint* Find(const std::vector<engine::TokenId>& prompt, size_t limit,
                         const std::vector<size_t>* cuts = nullptr) const;
  // A found checkpoint was restored (it becomes the most recently used), or a prefix that a
  // slot held could not be reused for want of one.
  void CountHit(const Checkpoint* used);
  void CountMiss() { ++misses_; }

  // Drops every checkpoint (a new engine was swapped in).
  void Clear();

  uint64_t count() const { return count_.load(); }
  uint64_t bytes() const { return bytes_.load(); }
  uint64_t hits() const { return hits_.load(); }
  uint64_t misses() const { return misses_.load(); }
  uint64_t budget_bytes() const { return budget_bytes_; }

 private:
  void Evict();

  const uint64_t budget_bytes_;
  std::list<Checkpoint> entries_;  // a list: Find's pointers survive other entries' removal
  uint64_t use_clock_ = 0;
  std::atomic<uint64_t> count_{0}, bytes_{0}, hits_{0}, misses_{0};
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_CHECKPOINT_STORE_H_
