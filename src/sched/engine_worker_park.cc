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

Status EngineWorker::DecodeFreeingPausedMemory(const std::vector<engine::DecodeItem>& call) {
  Status st = engine_->DecodeBatch(call);
  while (st.code() == StatusCode::kResourceExhausted && (FreeOneIdleSlot() || FreeOnePausedSlot())) {
    st = engine_->DecodeBatch(call);
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

// The lowest class's newest paused job gives its memory first: it has waited least.
bool EngineWorker::FreeOnePausedSlot() {
  Slot* victim = nullptr;
  for (auto& s : slots_) {
    if (!s->busy || !s->paused || s->parked.has_value() || s->resident.empty()) continue;
    if (victim == nullptr || s->job.request_class > victim->job.request_class ||
        (s->job.request_class == victim->job.request_class && s->job_id > victim->job_id)) {
      victim = s.get();
    }
  }
  if (victim == nullptr) return false;
  Result<std::string> parked = engine_->ParkSequence(victim->sequence);
  if (parked.has_value() && parked_bytes_ + parked->size() <= options_.parked_budget_bytes) {
    parked_bytes_ += parked->size();
    ++parked_;
    ++parks_;
    victim->parked = std::move(*parked);
    victim->parked_tokens = std::move(victim->resident);
    victim->resident.clear();
    return true;
  }
  // A drafter's memory cannot be rebuilt token by token: such a slot stays in place.
  if (!parked.has_value() && engine_->model_info().speculative.draft_max > 0) return false;
  Recompute(*victim);
  return true;
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
    // No room yet: it waits while others run; with nothing else holding memory, the parked
    // copy cannot come back, and the slot recomputes instead.
    const bool others_hold_memory = std::ranges::any_of(
        slots_, [&](const auto& o) { return o.get() != &s && o->busy && !o->resident.empty(); });
    if (st.code() != StatusCode::kResourceExhausted || !others_hold_memory) {
      Log(LogLevel::kWarn, "unpark_failed", {{"error", st.ToString()}});
      Recompute(s);
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
