// EngineWorker's prefix reuse: where a new job goes and what it keeps (its own slot's tokens,
// another slot's copied over, a recurrent-state checkpoint), where its prefill saves
// checkpoints, and waiting for a slot that is prefilling a shared prefix right now.
#include <algorithm>
#include <span>
#include <tuple>

#include "common/log.h"
#include "engine/prompt_kernels.h"
#include "sched/prefill_cuts.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {
namespace {

size_t CommonPrefix(const std::vector<engine::TokenId>& a, const std::vector<engine::TokenId>& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// The cuts below `length`.
std::span<const size_t> CutsBelow(const std::vector<size_t>& cuts, size_t length) {
  return {cuts.data(), static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), length) - cuts.begin())};
}

// The longest prefix, at most `limit` tokens, that both prompts' cold prefills pass through
// with the same state: a cut of both, with the same cuts before it.
size_t LastCommonCut(const std::vector<size_t>& a, const std::vector<size_t>& b, size_t limit) {
  size_t best = 0;
  for (size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i] && a[i] <= limit; ++i) best = a[i];
  return best;
}

}  // namespace

size_t EngineWorker::AlikePrefix(size_t computed_for, size_t prompt_tokens, size_t keep) const {
  const auto piece = static_cast<size_t>(engine_->model_info().memory.prompt_call_tokens);
  if (piece == 0) return keep;
  // Generated tokens were decoded as generation steps, which the same tokens in a cold
  // prefill are not (Engine::DecodeBatch): a follow-up prefills the previous reply again.
  return engine::SameKernelPrefix(std::min(keep, computed_for), computed_for, prompt_tokens, piece);
}

std::vector<size_t> EngineWorker::PromptCuts(const std::vector<engine::TokenId>& prompt) const {
  if (!ShapeMatters()) return {};
  // A chunk is one piece of one decode call, and fits one step.
  const int32_t piece = std::min(engine_->model_info().memory.decode_shape_tokens, options_.batch_tokens);
  return PrefillCuts(prompt, engine_->MessageStartToken(), static_cast<size_t>(piece));
}

bool EngineWorker::LiveStateServes(const Slot& source, const std::vector<size_t>* cuts) {
  const size_t n = source.resident.size();
  if (cuts == nullptr || n == 0) return true;
  // Generated tokens were decoded one at a time, which a cold prefill of them is not.
  if (n > source.prompt.size() || !IsCut(*cuts, n)) return false;
  return std::ranges::equal(CutsBelow(source.cuts, n), CutsBelow(*cuts, n));
}

bool EngineWorker::HoldsPromptEnd(const Slot& source, const std::vector<engine::TokenId>& prompt) {
  // The memory's first prompt.size() tokens are the cold prefill's of source.prompt (a job
  // reuses only what its cold prefill would compute alike), and so of `prompt`.
  return source.prompt_end != nullptr && source.prompt == prompt && CommonPrefix(source.resident, prompt) == prompt.size();
}

void EngineWorker::SampleKeptPromptEnd(Slot& slot) {
  slot.prefill_started = true;
  slot.prefill_start_ms = slot.prefill_end_ms = clock_.NowMs();
  Sample(slot, {.kept = slot.prompt_end.get(), .sequence = slot.sequence});
}

bool EngineWorker::FreeSlotGoesFirst(const Slot& a, const Slot& b) const {
  // A free sequence's memory is a prefix cache where it can be cut anywhere: the least
  // recently used goes first. Recurrent memory is served from checkpoints instead (a finished
  // job's live state holds its generated tokens: LiveStateServes), so the most recently used
  // goes first: its state is resident already, where a sequence never used would add a whole
  // recurrent state (~20 MB on a 0.8B hybrid) to the resident memory.
  if (engine_->model_info().memory.partial_truncation) return a.last_used < b.last_used;
  return a.last_used > b.last_used;
}

const EngineWorker::Slot* EngineWorker::PlaceTakenOver(RequestClass request_class) const {
  const Slot* leaving = nullptr;
  size_t busy = 0;
  for (const auto& s : slots_) {
    if (!s->busy) continue;
    // It outranks a busy job: it decodes at once, in the place of the one paused for it.
    if (ClassIndex(request_class) < ClassIndex(s->job.request_class)) return nullptr;
    ++busy;
    if (leaving == nullptr || s->budget < leaving->budget) leaving = s.get();
  }
  return busy >= DecodeWidth() ? leaving : nullptr;
}

EngineWorker::ReusePlan EngineWorker::PlanReuse(const std::vector<engine::TokenId>& prompt,
                                                const std::vector<size_t>* cuts, RequestClass request_class,
                                                Slot* only_target, const Slot* leaving) {
  const engine::MemoryCapabilities& caps = engine_->model_info().memory;
  // The last prompt token is decoded anew, for logits, unless they were kept (HoldsPromptEnd).
  const size_t limit_all = prompt.size() - 1;
  // What `source`'s memory can give a job landing on `target`.
  auto reusable = [&](const Slot& target, const Slot& source, const Checkpoint** checkpoint) -> size_t {
    *checkpoint = nullptr;
    if (&source != &target && !caps.sequence_copy) return 0;
    const size_t limit = std::min(CommonPrefix(source.resident, prompt), limit_all);
    if (caps.partial_truncation) {
      return HoldsPromptEnd(source, prompt) ? prompt.size() : AlikePrefix(source.prompt.size(), prompt.size(), limit);
    }
    if (limit == source.resident.size() && LiveStateServes(source, cuts)) return limit;
    if (!caps.state_checkpoints) return 0;
    *checkpoint = checkpoints_.Find(prompt, limit, cuts);
    return *checkpoint != nullptr ? (*checkpoint)->tokens.size() : 0;
  };
  // The runs of consecutive sequences (step_policy.h) `target` would decode beside: the busy
  // slots but `leaving`.
  auto runs_with = [&](const Slot& target) {
    std::vector<size_t> used;
    for (const auto& s : slots_) {
      if ((s->busy && s.get() != leaving) || s.get() == &target) used.push_back(static_cast<size_t>(s->sequence));
    }
    return Runs(std::move(used));
  };
  ReusePlan best;
  std::tuple<int64_t, bool, bool, size_t> best_rank;  // lower goes first
  for (auto& t : slots_) {
    if (only_target != nullptr ? t.get() != only_target : t->busy) continue;
    ReusePlan plan{.target = t.get(), .source = t.get()};
    plan.keep = reusable(*t, *t, &plan.checkpoint);
    // Another slot's memory (busy or not) is worth copying only for a real gain.
    for (auto& s : slots_) {
      if (s.get() == t.get()) continue;
      const Checkpoint* checkpoint = nullptr;
      const size_t n = reusable(*t, *s, &checkpoint);
      if (n >= plan.keep + options_.min_shared_prefix) plan = {.target = t.get(), .source = s.get(), .keep = n, .checkpoint = checkpoint};
    }
    // Most reuse first; then no cache a higher class left dropped (the voice pipeline's last
    // prompt, which its next one reuses, outlives the background jobs admitted meanwhile);
    // then no copy over a copy (a copy moves a whole sequence's memory); then the busy
    // sequences kept consecutive; then by when the slot was last used.
    const size_t dropped = t->resident.size() - (plan.source == t.get() ? std::min(plan.keep, t->resident.size()) : 0);
    const bool drops = !MayDropCache(t->cached_class, dropped, request_class);
    const auto rank = std::make_tuple(-static_cast<int64_t>(plan.keep), drops, plan.source != plan.target, runs_with(*t));
    if (best.target == nullptr || rank < best_rank || (rank == best_rank && FreeSlotGoesFirst(*t, *best.target))) {
      best = plan;
      best_rank = rank;
    }
  }
  if (best.target != nullptr) {
    if (const PinnedPrefix* pinned = PinnedFor(prompt, cuts, best.keep); pinned != nullptr) {
      best = {.target = best.target, .source = best.target, .keep = pinned->tokens.size(), .pinned = pinned};
    }
  }
  if (best.keep == prompt.size()) best.prompt_end = best.source->prompt_end;
  for (auto& s : slots_) best.best_common = std::max(best.best_common, CommonPrefix(s->resident, prompt));
  best.best_common = std::min(best.best_common, limit_all);
  return best;
}

// Puts the planned prefix into the target's memory; returns the tokens actually reused. A
// memory operation that fails falls back to starting the sequence over, which always works.
size_t EngineWorker::ApplyReuse(const ReusePlan& plan) {
  Slot& t = *plan.target;
  if (!engine_->model_info().memory.partial_truncation && plan.best_common >= plan.keep + options_.min_shared_prefix) {
    checkpoints_.CountMiss();  // some slot held much more of this prompt than could be reused
  }
  Status st;
  if (plan.pinned != nullptr) {
    st = engine_->TruncateSequence(t.sequence, 0);
    if (st.ok()) st = engine_->UnparkSequence(t.sequence, plan.pinned->state);
    if (st.ok()) {
      t.resident = plan.pinned->tokens;
      ++pinned_hits_;
      return plan.keep;
    }
  } else if (plan.keep > 0 && plan.source != &t) {
    st = engine_->CopySequence(plan.source->sequence, t.sequence);
    if (st.ok()) {
      t.resident = plan.source->resident;
      ++prefix_copies_;
    }
  }
  if (st.ok() && plan.keep > 0 && plan.checkpoint != nullptr) {
    st = engine_->RestoreSequenceState(t.sequence, plan.checkpoint->state);
    if (st.ok()) checkpoints_.CountHit(plan.checkpoint);
  }
  if (st.ok() && plan.keep < t.resident.size()) {
    st = engine_->TruncateSequence(t.sequence, static_cast<int32_t>(plan.keep));
  }
  if (st.ok()) {
    t.resident.resize(plan.keep);
    return plan.keep;
  }
  Log(LogLevel::kWarn, "prefix_reuse_failed", {{"sequence", std::to_string(t.sequence)}, {"error", st.ToString()}});
  t.resident.clear();
  if (Status cleared = engine_->TruncateSequence(t.sequence, 0); !cleared.ok()) {
    Log(LogLevel::kError, "sequence_clear_failed", {{"error", cleared.ToString()}});
  }
  return 0;
}

// Where to save the recurrent state while this slot prefills, among its prefill cuts: the last
// few message starts (a shared system prompt, the history of a conversation) and the cut
// before the last token (the same prompt sent again). Chosen from the whole prompt, then those
// still ahead, so a job saves the same checkpoints whatever prefix it started from.
void EngineWorker::PlanCheckpoints(Slot& slot) {
  slot.checkpoint_at.clear();
  if (!engine_->model_info().memory.state_checkpoints || slot.cuts.empty()) return;
  constexpr size_t kMessageCheckpoints = 4;
  std::vector<size_t> at = MessageCuts(slot.prompt, slot.cuts, engine_->MessageStartToken());
  if (at.size() > kMessageCheckpoints) at.erase(at.begin(), at.end() - kMessageCheckpoints);
  // And the last cut, where a resend of the prompt restores its state (PrefillCuts: before the
  // last token, or a message start a few tokens before it).
  if (at.empty() || at.back() != slot.cuts.back()) at.push_back(slot.cuts.back());
  for (size_t c : at) {
    if (c > slot.prefilled) slot.checkpoint_at.push_back(c);
  }
}

// Another slot is prefilling, right now, a prefix this job shares: wait for it and copy it,
// instead of computing the same tokens twice (a burst of conversations with one system
// prompt).
void EngineWorker::WaitForSharedPrefix(Slot& slot) {
  const engine::MemoryCapabilities& caps = engine_->model_info().memory;
  if (!caps.sequence_copy || (!caps.partial_truncation && !caps.state_checkpoints)) return;
  Slot* source = nullptr;
  size_t until = 0;
  for (auto& o : slots_) {
    if (o.get() == &slot || !o->busy || o->wait_source != nullptr || o->has_pending) continue;
    // A lower class's prefill may be paused or held to a share for this job: no waiting on it.
    if (o->paused || o->job.request_class > slot.job.request_class) continue;
    size_t shared = std::min(CommonPrefix(o->prompt, slot.prompt), slot.prompt.size() - 1);
    if (ShapeMatters()) shared = LastCommonCut(slot.cuts, o->cuts, shared);
    shared = AlikePrefix(o->prompt.size(), slot.prompt.size(), shared);  // what it could reuse
    if (shared < slot.prefilled + options_.min_shared_prefix || o->prefilled >= shared) continue;
    if (shared > until) {
      source = o.get();
      until = shared;
    }
  }
  if (source == nullptr) return;
  slot.wait_source = source;
  slot.wait_job_id = source->job_id;
  slot.wait_until = until;
  auto& at = source->checkpoint_at;
  if (caps.state_checkpoints && std::find(at.begin(), at.end(), until) == at.end()) {
    at.insert(std::upper_bound(at.begin(), at.end(), until), until);
  }
}

// Jobs waiting for a shared prefix: copy it once the source has it, or plan afresh if the
// source's job ended first.
void EngineWorker::ResolveSharedPrefixWaits() {
  for (auto& s : slots_) {
    if (!s->busy || s->wait_source == nullptr) continue;
    Slot& source = *s->wait_source;
    const bool gone = !source.busy || source.job_id != s->wait_job_id;
    if (!gone && !source.paused && source.prefilled < s->wait_until) continue;
    s->wait_source = nullptr;
    ReusePlan plan = PlanReuse(s->prompt, ShapeMatters() ? &s->cuts : nullptr, s->job.request_class, s.get());
    if (plan.keep > s->prefilled) {
      s->prefilled = ApplyReuse(plan);
      s->out.stats.cached_tokens = static_cast<int32_t>(s->prefilled);
      PlanCheckpoints(*s);
      // Its twin (the same prompt, `n` choices of one request) prefilled it all: the logits
      // of its last token came with it.
      if (s->prefilled == s->prompt.size()) {
        s->prompt_end = plan.prompt_end;
        SampleKeptPromptEnd(*s);
        continue;
      }
    }
    // The source ended before the shared prefix: the first waiter re-planned above now
    // prefills it, and the rest wait for that one instead of each computing it.
    if (gone) WaitForSharedPrefix(*s);
  }
}

}  // namespace llmd::sched
