// EngineWorker's speculative decoding: the drafts of a step (DraftLimit, DraftFor) and their
// verification (Verify). docs/architecture.md, "Speculative decoding", says how it works.
#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

int32_t EngineWorker::DraftLimit(const Slot& slot) const {
  const engine::ModelInfo& info = engine_->model_info();
  int64_t limit = info.speculative.draft_max;
  if (slot.Replaying()) return 0;  // its next tokens are known
  if (const int32_t asked = slot.job.options.draft_max; asked >= 0) limit = std::min<int64_t>(limit, asked);
  // Tokens the job may still generate after the pending one, and room in the context.
  limit = std::min(limit, slot.budget - 1);
  limit = std::min<int64_t>(limit, ContextFor(slot.job) - static_cast<int64_t>(slot.resident.size()) - 2);
  // Memory that cannot be cut takes back at most rollback_tokens.
  if (!info.memory.partial_truncation) limit = std::min<int64_t>(limit, info.memory.rollback_tokens);
  return static_cast<int32_t>(std::max<int64_t>(0, limit));
}

void EngineWorker::DraftFor(const std::vector<Slot*>& generating, int64_t room) {
  if (engine_->model_info().speculative.draft_max <= 0) return;
  std::vector<engine::DraftRequest> requests;
  for (Slot* s : generating) {
    s->draft.clear();
    const int32_t limit = std::min(DraftLimit(*s), s->pacer.max_tokens());
    if (limit <= 0) continue;
    if (!s->pacer.ShouldDraft()) {
      s->pacer.OnTokenWithoutDraft();
      continue;
    }
    requests.push_back({.sequence = s->sequence, .history = s->resident, .last = s->pending, .max_tokens = limit});
  }
  if (requests.empty()) return;
  // The step's token budget is shared out in slot order; prompt chunks get what is left.
  for (auto& r : requests) {
    r.max_tokens = static_cast<int32_t>(std::min<int64_t>(r.max_tokens, std::max<int64_t>(0, room)));
    room -= r.max_tokens;
  }
  std::erase_if(requests, [](const engine::DraftRequest& r) { return r.max_tokens <= 0; });
  if (Status st = engine_->Draft(&requests); !st.ok()) {
    Log(LogLevel::kWarn, "draft_failed", {{"error", st.ToString()}});
    return;  // this step goes without drafts
  }
  const int32_t min_tokens = std::max(1, engine_->model_info().speculative.draft_min);
  for (auto& r : requests) {
    Slot& slot = *slots_[r.sequence];
    if (static_cast<int32_t>(r.draft.size()) < min_tokens) {
      slot.pacer.OnTokenWithoutDraft();
      continue;
    }
    slot.draft = std::move(r.draft);
  }
}

// The items after the pending token are the draft: sampling at item m gives the token after
// it, which is the draft's (m+1)th guess when the target agrees. The first disagreement is
// the target's own token and ends the block.
void EngineWorker::Verify(Slot& slot, int32_t output_index) {
  const std::vector<engine::TokenId> draft = std::move(slot.draft);
  slot.draft.clear();
  const size_t base = slot.resident.size() - draft.size() - 1;  // the pending token's position
  const uint64_t job = slot.job_id;
  slot.out.stats.draft_tokens += static_cast<int32_t>(draft.size());
  size_t m = 0;
  for (;; ++m) {
    DraftCheck check{.guess = m < draft.size() ? draft[m] : 0, .position = m};
    Sample(slot, {.index = output_index + static_cast<int32_t>(m)}, m < draft.size() ? &check : nullptr);
    const bool going = slot.busy && slot.job_id == job && slot.has_pending;
    if (!going || !check.accepted) break;
    slot.has_pending = false;  // the guess is in memory already; its logits give the next token
  }
  const auto accepted = static_cast<int32_t>(m);
  if (slot.busy && slot.job_id == job) slot.pacer.OnVerified(static_cast<int32_t>(draft.size()), accepted);
  engine_->AcceptDraft(slot.sequence, accepted);
  const size_t keep = base + m + 1;  // through the last item whose logits were used
  if (keep >= slot.resident.size()) return;
  if (Status st = engine_->TruncateSequence(slot.sequence, static_cast<int32_t>(keep)); !st.ok()) {
    // The memory holds rejected tokens it cannot drop: this sequence starts over.
    Log(LogLevel::kError, "draft_rollback_failed", {{"error", st.ToString()}});
    if (slot.busy && slot.job_id == job) {
      Fail(slot, st);
    } else if (Status cleared = engine_->TruncateSequence(slot.sequence, 0); !cleared.ok()) {
      Log(LogLevel::kError, "sequence_clear_failed", {{"error", cleared.ToString()}});
    }
    slot.resident.clear();
    return;
  }
  slot.resident.resize(keep);
}

}  // namespace llmd::sched
