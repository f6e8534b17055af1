// EngineWorker under memory pressure: when the engine has no room for a step, idle slots drop
// their cached prefixes (least recently used first), and then paused slots (sitting out for a
// higher class) give their memory. A paused slot's memory is parked in host memory
// (Engine::ParkSequence: KV cells and recurrent state, as llama.cpp's per-sequence state API
// writes them) within parked_budget_bytes, and put back when the slot runs again. Past that
// budget, or where the engine cannot park, it is dropped and recomputed from the slot's tokens
// when the slot resumes: the prompt prefilled again (at its own cuts), then each token
// generated before fed back in order instead of being sampled again. Either way the job keeps
// every token it had and its answer does not change.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

Status EngineWorker::DecodeFreeingMemory(std::vector<engine::DecodeItem>* call, const std::function<bool()>* stop) {
  auto decode = [&] { return stop != nullptr ? engine_->DecodeBatchUnlessStopped(*call, *stop) : engine_->DecodeBatch(*call); };
  // Slots that gave their memory up earlier in this step sit the rest of it out.
  std::erase_if(*call, [&](const engine::DecodeItem& d) { return slots_[d.sequence]->memory_wait; });
  if (call->empty()) return Status::Ok();
  Status st = decode();
  while (st.code() == StatusCode::kResourceExhausted && (FreeOneIdleSlot() || FreeOnePausedSlot() || PreemptForMemory())) {
    std::erase_if(*call, [&](const engine::DecodeItem& d) { return slots_[d.sequence]->memory_wait; });
    if (call->empty()) return Status::Ok();
    st = decode();
  }
  return st;
}

// An idle slot's memory is a cached prefix, the first thing to go: least recently used first.
bool EngineWorker::FreeOneIdleSlot() {
  Slot* victim = nullptr;
  for (auto& s : slots_) {
    if (s->busy || s->resident.empty()) continue;
    if (victim == nullptr || s->last_used < victim->last_used) victim = s.get();
  }
  if (victim == nullptr) return false;
  if (Status st = engine_->TruncateSequence(victim->sequence, 0); !st.ok()) {
    Log(LogLevel::kError, "sequence_clear_failed", {{"error", st.ToString()}});
    return false;
  }
  victim->resident.clear();
  return true;
}

namespace {

// Which of two running jobs gives way first: the lower class, then the newer (it has done
// least).
bool RanksBelow(const Job& a, uint64_t a_id, const Job& b, uint64_t b_id) {
  if (a.request_class != b.request_class) return a.request_class > b.request_class;
  return a_id > b_id;
}

}  // namespace

// The lowest class's newest paused job gives its memory first: it has waited least.
bool EngineWorker::FreeOnePausedSlot() {
  Slot* victim = nullptr;
  for (auto& s : slots_) {
    if (!s->busy || !s->paused || s->parked.has_value() || s->resident.empty()) continue;
    if (victim == nullptr || RanksBelow(s->job, s->job_id, victim->job, victim->job_id)) victim = s.get();
  }
  if (victim == nullptr) return false;
  GiveUpMemory(*victim);
  return true;
}

// A full pool (one KV cache the sequences share): the running job that ranks lowest gives its
// memory up and waits for a job to end; a higher class's job thus preempts a lower one's,
// and a new job of the same class waits for the older ones. Needs two contenders: a job
// alone in the pool has nobody to wait for.
bool EngineWorker::PreemptForMemory() {
  Slot* victim = nullptr;
  size_t contenders = 0;
  for (auto& s : slots_) {
    if (!s->busy || s->memory_wait || s->parked.has_value()) continue;
    ++contenders;
    if (victim == nullptr || RanksBelow(s->job, s->job_id, victim->job, victim->job_id)) victim = s.get();
  }
  if (victim == nullptr || contenders < 2) return false;
  if (!victim->resident.empty() && !GiveUpMemory(*victim)) return false;
  if (!victim->paused) {
    ++preemptions_;
    ++victim->out.stats.preemptions;
  }
  victim->paused = true;
  victim->memory_wait = true;
  Log(LogLevel::kInfo, "waiting_for_memory", {{"sequence", std::to_string(victim->sequence)},
                                              {"tokens", std::to_string(victim->prompt.size())}});
  return true;
}

bool EngineWorker::GiveUpMemory(Slot& slot) {
  Result<std::string> parked = engine_->ParkSequence(slot.sequence);
  if (parked.has_value() && parked_bytes_ + parked->size() <= options_.parked_budget_bytes) {
    parked_bytes_ += parked->size();
    ++parked_;
    ++parks_;
    slot.parked = std::move(*parked);
    slot.parked_tokens = std::move(slot.resident);
    slot.resident.clear();
    slot.draft.clear();
    return true;
  }
  // A drafter's memory cannot be rebuilt token by token: such a slot stays in place.
  if (!parked.has_value() && engine_->model_info().speculative.draft_max > 0) return false;
  Recompute(slot);
  return true;
}

Status EngineWorker::PoolFullError(const Slot& slot) const {
  const engine::ModelInfo& info = engine_->model_info();
  size_t others = 0;
  for (const auto& s : slots_) {
    if (s.get() != &slot) others += s->resident.size();
  }
  const int64_t pool = info.pool_tokens > 0 ? info.pool_tokens : int64_t{info.context_tokens} * info.sequences;
  return ResourceExhaustedError(
             "the KV cache has no room: this request needs " + std::to_string(slot.prompt.size() + 1) +
             " tokens, " + std::to_string(pool - static_cast<int64_t>(others)) + " of the cache's " +
             std::to_string(pool) + " are free beside what other requests hold; retry, or give llmd more memory "
             "(memory_budget_mb)");
}

// The slot's memory goes; it prefills its prompt again and feeds back what it generated.
void EngineWorker::Recompute(Slot& slot) {
  if (Status st = engine_->TruncateSequence(slot.sequence, 0); !st.ok()) {
    Log(LogLevel::kError, "sequence_clear_failed", {{"error", st.ToString()}});
  }
  std::vector<engine::TokenId> held = slot.parked.has_value() ? std::move(slot.parked_tokens) : std::move(slot.resident);
  ForgetParked(slot);
  slot.replay.clear();
  slot.replayed = 0;
  if (held.size() > slot.prompt.size()) slot.replay.assign(held.begin() + static_cast<ptrdiff_t>(slot.prompt.size()), held.end());
  if (slot.has_pending) slot.replay.push_back(slot.pending);
  slot.has_pending = false;
  slot.draft.clear();
  slot.resident.clear();
  slot.prefilled = 0;
  ++recomputes_;
  Log(LogLevel::kInfo, "sequence_recomputed", {{"sequence", std::to_string(slot.sequence)},
                                              {"tokens", std::to_string(slot.prompt.size() + slot.replay.size())}});
}

void EngineWorker::ForgetParked(Slot& slot) {
  if (!slot.parked.has_value()) return;
  parked_bytes_ -= slot.parked->size();
  --parked_;
  slot.parked.reset();
  slot.parked_tokens.clear();
}

void EngineWorker::UnparkChosen(StepChoice* choice) {
  auto unparked = [&](size_t i) {
    Slot& s = *slots_[i];
    if (!s.parked.has_value()) return true;
    Status st = engine_->UnparkSequence(s.sequence, *s.parked);
    while (st.code() == StatusCode::kResourceExhausted && FreeOneIdleSlot()) {
      st = engine_->UnparkSequence(s.sequence, *s.parked);
    }
    if (st.ok()) {
      s.resident = std::move(s.parked_tokens);
      ForgetParked(s);
      return true;
    }
    // No room yet: it waits for a job to end; with nothing else holding memory, the parked
    // copy cannot come back, and the slot recomputes instead.
    const bool others_hold_memory = std::ranges::any_of(
        slots_, [&](const auto& o) { return o.get() != &s && o->busy && !o->resident.empty(); });
    if (st.code() != StatusCode::kResourceExhausted || !others_hold_memory) {
      Log(LogLevel::kWarn, "unpark_failed", {{"error", st.ToString()}});
      Recompute(s);
    } else {
      s.memory_wait = true;
    }
    choice->paused.push_back(i);
    return false;
  };
  std::erase_if(choice->decode, [&](size_t i) { return !unparked(i); });
  for (size_t k = choice->prefill.size(); k-- > 0;) {
    if (unparked(choice->prefill[k])) continue;
    choice->prefill.erase(choice->prefill.begin() + static_cast<ptrdiff_t>(k));
    choice->prefill_shared.erase(choice->prefill_shared.begin() + static_cast<ptrdiff_t>(k));
  }
}

}  // namespace llmd::sched
