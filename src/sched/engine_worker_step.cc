// EngineWorker's decode step: what the step policy chose, as decode calls (cut where the shape
// of a call changes its arithmetic), what each call left in memory, and a failed step retried
// one sequence at a time.
#include <map>
#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/decode_calls.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

StepChoice EngineWorker::ChooseThisStep() {
  const bool copies = engine_->model_info().memory.sequence_copy;
  std::vector<SlotView> busy;
  std::vector<MoveCandidate> free;  // where a move may go, with what each caches
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = *slots_[i];
    if (!s.busy) {
      free.push_back({i, s.resident.size(), s.cached_class});
      continue;
    }
    busy.push_back({.slot = i,
                    .request_class = s.job.request_class,
                    .peer_uid = s.job.peer_uid,
                    .admitted = s.job_id,
                    .generating = s.has_pending,
                    .prefilling = s.Prefilling(),
                    .waiting = s.wait_source != nullptr || s.memory_wait,
                    .fixed_chunks = !s.cuts.empty(),
                    .movable = copies && MayMove(s),
                    .tokens = s.resident.size()});
  }
  const bool interactive_lately = last_interactive_ms_ >= 0 && clock_.NowMs() - last_interactive_ms_ < kInteractiveLingerMs;
  StepPolicyOptions policy{.decode_width = DecodeWidth(),
                           .shared_prefill_tokens = options_.shared_prefill_tokens,
                           .shared_prefill_cap = SharedPrefillTimeBudget(decode_call_ms_, prompt_token_ms_,
                                                                         options_.whole_chunk_tokens),
                           .interactive_expected = options_.interactive_peers || interactive_lately,
                           .runs_cost_passes = engine_->model_info().memory.stream_per_sequence};
  if (options_.background_mode) policy.background = options_.background_mode();
  StepChoice choice = ChooseStep(busy, policy, ++rounds_, free);
  ApplyMoves(&choice);
  UnparkChosen(&choice);
  std::array<uint32_t, kRequestClasses> by_class{};
  for (const SlotView& view : busy) ++by_class[ClassIndex(view.request_class)];
  for (int c = 0; c < kRequestClasses; ++c) busy_by_class_[c] = by_class[c];
  // A slot that ran and now sits out was preempted; one that sat out and runs again resumes
  // where it stopped (its memory and sampler did not move). One whose prompt was computed
  // ahead and that waits for its first place in the width was not preempted.
  for (size_t i : choice.paused) {
    Slot& s = *slots_[i];
    if (!s.paused && (s.decoded || s.Prefilling())) {
      ++preemptions_;
      ++s.out.stats.preemptions;
    }
    s.paused = true;
  }
  for (size_t i : choice.decode) {
    slots_[i]->paused = false;
    slots_[i]->decoded = true;
  }
  for (size_t i : choice.prefill) slots_[i]->paused = false;
  paused_ = static_cast<uint32_t>(choice.paused.size());
  return choice;
}

bool EngineWorker::Step() {
  // Cancelled jobs end before any more work is spent on them.
  for (auto& s : slots_) {
    if (s->busy && s->job.channel->cancelled()) Finish(*s, engine::FinishReason::kCancelled);
  }
  ResolveSharedPrefixWaits();
  const StepChoice choice = ChooseThisStep();
  std::vector<engine::DecodeItem> batch;
  // Running slots that generate first: one token each, so streams keep flowing, and its draft.
  std::vector<Slot*> generating;
  for (size_t i : choice.decode) generating.push_back(slots_[i].get());
  const int64_t start_us = clock_.NowUs();
  const uint64_t sampled_before = sampled_tokens_;
  const bool may_draft = engine_->model_info().speculative.draft_max > 0 && !generating.empty() &&
                         draft_governor_.MayDraft(generating.size());
  if (may_draft) DraftFor(generating, options_.batch_tokens - static_cast<int64_t>(generating.size()));
  bool drafted = false;
  for (Slot* s : generating) {
    const auto at = static_cast<int32_t>(s->resident.size());
    batch.push_back({s->sequence, at, s->pending, true});
    drafted = drafted || !s->draft.empty();
    for (size_t i = 0; i < s->draft.size(); ++i) {
      batch.push_back({s->sequence, at + 1 + static_cast<int32_t>(i), s->draft[i], true});
    }
  }
  // Then prompt chunks in the policy's order, within the step's token budget; lower classes'
  // chunks beside interactive work within their shared budget, all of them together.
  const size_t generated_items = batch.size();
  bool first_chunk = true;
  int64_t shared_left = choice.shared_prefill_tokens;
  const auto at_most = [](int64_t limit, int64_t most) { return limit < 0 ? most : std::min(limit, most); };
  for (size_t k = 0; k < choice.prefill.size(); ++k) {
    if (static_cast<int64_t>(batch.size()) >= options_.batch_tokens) break;
    const bool shared = choice.prefill_shared[k];
    Slot& slot = *slots_[choice.prefill[k]];
    int64_t limit = shared ? shared_left : -1;
    if (slot.short_chunks) limit = at_most(limit, options_.shared_prefill_tokens);
    if (slot.stopped && slot.cuts.empty()) limit = at_most(limit, options_.whole_chunk_tokens);
    const size_t before = batch.size();
    if (AddPromptChunk(slot, &batch, first_chunk, limit)) first_chunk = false;
    if (shared) shared_left -= static_cast<int64_t>(batch.size() - before);
  }
  if (batch.empty()) return false;
  ++steps_;
  const bool prefilled = batch.size() > generated_items;
  std::vector<std::vector<engine::DecodeItem>> calls;
  if (ShapeMatters()) {
    calls = ShapeStableCalls(batch, static_cast<size_t>(engine_->model_info().memory.decode_shape_tokens));
  } else if (engine_->model_info().memory.prompt_calls_apart) {
    calls = GenerationThenPromptCalls(batch);
  } else {
    calls.push_back(std::move(batch));
  }
  const bool failed = RunCalls(&calls);
  // A step that also prefilled, or failed, says nothing about what drafts cost.
  if (!prefilled && !failed && !generating.empty()) {
    draft_governor_.OnStep(generating.size(), drafted, clock_.NowUs() - start_us,
                           static_cast<int64_t>(sampled_tokens_ - sampled_before));
  }
  return true;
}

bool EngineWorker::RunCalls(std::vector<std::vector<engine::DecodeItem>>* calls) {
  // The calls of the highest standing first: an interactive prompt is computed before the
  // background decodes beside it, as a peer's first prompt before another peer's decode of its
  // class, and its first token comes out a call sooner.
  std::vector<std::pair<int, std::vector<engine::DecodeItem>*>> order;
  for (auto& call : *calls) {
    OrderBySequence(&call);
    order.emplace_back(CallStanding(call), &call);
  }
  // Of calls that stand alike, the smaller first: of two peers' first prompts, the short one's
  // first token does not wait for the long one's chunk.
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->size() < b.second->size();
  });
  bool failed = false;
  for (auto& [standing, call_of] : order) {
    std::vector<engine::DecodeItem>& call = *call_of;
    // A job that stands above the call arrived during the step: the call is skipped, or
    // stopped where the engine can undo it, and the job is admitted and prefilled next. A call
    // that must run whole (stopped last time) is put off behind the job once, not run first.
    const bool may_stop = MayStop(call);
    if (arrived_standing_.load() < standing && (may_stop || Postpone(call))) {
      if (may_stop) OnStopped(call);
      LogCall(call, standing, may_stop ? "skipped" : "put_off", 0);
      failed = true;
      continue;
    }
    const std::function<bool()> stop = [this, standing = standing] {
      return arrived_standing_.load(std::memory_order_relaxed) < standing;
    };
    const int64_t start_us = clock_.NowUs();
    Status st = DecodeFreeingMemory(&call, may_stop ? &stop : nullptr);
    const int64_t took_us = clock_.NowUs() - start_us;
    if (st.code() == StatusCode::kCancelled && may_stop) {
      OnStopped(call);
      LogCall(call, standing, "stopped", took_us);
      failed = true;
      continue;
    }
    LogCall(call, standing, st.ok() ? (may_stop ? "ran" : "ran_whole") : "failed", took_us);
    if (!st.ok()) {
      RecoverFailedStep(call, st);
      failed = true;
      continue;
    }
    NoteCallCost(call, took_us);
    for (const auto& item : call) slots_[item.sequence]->stopped = false;
    AfterDecode(call, OutputsOf(call));
  }
  return failed;
}

namespace {

// A call's sequences, each once, in the call's order ("0,1,2,4"): a gap is a micro-batch more.
std::string SequenceList(const std::vector<engine::DecodeItem>& call) {
  std::string out;
  for (size_t i = 0; i < call.size(); ++i) {
    if (i > 0 && call[i].sequence == call[i - 1].sequence) continue;
    if (!out.empty()) out += ',';  // (appended in two: GCC 12 warns -Wrestrict on "," + string)
    out += std::to_string(call[i].sequence);
  }
  return out;
}

}  // namespace

void EngineWorker::LogCall(const std::vector<engine::DecodeItem>& call, int standing, const char* outcome,
                           int64_t took_us) const {
  if (!LogEnabled(LogLevel::kDebug)) return;  // a call is the hot path: build no line nobody reads
  const size_t prompt = static_cast<size_t>(
      std::count_if(call.begin(), call.end(), [](const engine::DecodeItem& item) { return item.prompt_tokens > 0; }));
  Log(LogLevel::kDebug, "decode_call",
      {{"step", std::to_string(steps_.load())},
       {"outcome", outcome},
       {"standing", std::to_string(standing)},
       {"tokens", std::to_string(call.size())},
       {"prompt_tokens", std::to_string(prompt)},
       {"sequences", SequenceList(call)},
       {"arrived_standing", std::to_string(arrived_standing_.load())},
       // For a call stopped or skipped for an arrival: from the arrival to now, the stop's delay.
       {"since_arrival_ms", arrived_us_.load() < 0 ? std::string("none")
                                                   : std::to_string(static_cast<double>(clock_.NowUs() - arrived_us_.load()) / 1000.0)},
       {"ms", std::to_string(static_cast<double>(took_us) / 1000.0)}});
}

int EngineWorker::CallStanding(const std::vector<engine::DecodeItem>& call) const {
  int standing = kNoStanding;
  for (size_t i = 0; i < call.size(); ++i) {
    if (i > 0 && call[i].sequence == call[i - 1].sequence) continue;  // one look a slot (items in sequence order)
    const Slot& s = *slots_[call[i].sequence];
    // Its peer's first busy slot of its class (the oldest job).
    const bool peers_first = std::none_of(slots_.begin(), slots_.end(), [&](const auto& t) {
      return t->busy && t->job.request_class == s.job.request_class && t->job.peer_uid == s.job.peer_uid &&
             t->job_id < s.job_id;
    });
    standing = std::min(standing, Standing(s.job.request_class, peers_first, s.Prefilling()));
  }
  return standing;
}

bool EngineWorker::Postpone(const std::vector<engine::DecodeItem>& call) {
  const uint64_t step = steps_.load();  // this step's number
  const bool may = std::none_of(call.begin(), call.end(), [&](const engine::DecodeItem& item) {
    const Slot& s = *slots_[item.sequence];
    return (s.postponed_step != 0 && s.postponed_step + 1 == step) || !s.draft.empty();
  });
  if (may) {
    for (const auto& item : call) slots_[item.sequence]->postponed_step = step;
  }
  return may;
}

void EngineWorker::NoteCallCost(const std::vector<engine::DecodeItem>& call, int64_t took_us) {
  // A short prompt call's fixed costs would read as its tokens'.
  constexpr size_t kTimedPromptTokens = 16;
  const auto mean = [](double* avg, double x) { *avg = *avg == 0 ? x : 0.8 * *avg + 0.2 * x; };
  const auto prompt = static_cast<size_t>(
      std::count_if(call.begin(), call.end(), [](const engine::DecodeItem& item) { return item.prompt_tokens > 0; }));
  const double ms = static_cast<double>(took_us) / 1000.0;
  if (prompt == 0) mean(&decode_call_ms_, ms);
  else if (prompt == call.size() && prompt >= kTimedPromptTokens) mean(&prompt_token_ms_, ms / static_cast<double>(prompt));
}

bool EngineWorker::MayStop(const std::vector<engine::DecodeItem>& call) const {
  return std::none_of(call.begin(), call.end(), [&](const engine::DecodeItem& item) {
    const Slot& s = *slots_[item.sequence];
    return s.stopped || !s.draft.empty();
  });
}

void EngineWorker::OnStopped(const std::vector<engine::DecodeItem>& call) {
  for (const auto& item : call) {
    Slot& s = *slots_[item.sequence];
    if (s.stopped) continue;  // counted at its first item
    s.stopped = true;
    // A prompt whose chunks can be cut shorter (no prefill cuts) goes on in short ones.
    if (s.Prefilling() && s.cuts.empty()) s.short_chunks = true;
    ++preemptions_;
    ++s.out.stats.preemptions;
  }
}

// Adds the slot's next prompt tokens, up to the step's room and ending at the next
// checkpoint, so the state after exactly those tokens can be saved. Where the shape of a
// decode matters, the chunk runs to the next prefill cut, never shorter: the step's first
// chunk goes in whatever the room (it is a decode call of its own), a later one only if it fits.
bool EngineWorker::AddPromptChunk(Slot& slot, std::vector<engine::DecodeItem>* batch, bool first_chunk,
                                  int64_t limit) {
  size_t room = static_cast<size_t>(options_.batch_tokens) - batch->size();
  if (limit >= 0) room = std::min(room, static_cast<size_t>(limit));
  if (room == 0) return false;
  size_t end = std::min(slot.prompt.size(), slot.prefilled + room);
  if (!slot.cuts.empty()) {
    const auto next = std::upper_bound(slot.cuts.begin(), slot.cuts.end(), slot.prefilled);
    end = next == slot.cuts.end() ? slot.prompt.size() : *next;
    // A chunk beside a higher class's work must fit its share: it cannot be cut shorter.
    if ((!first_chunk || limit >= 0) && end - slot.prefilled > room) return false;
  }
  if (!slot.prefill_started) {
    slot.prefill_started = true;
    slot.prefill_start_ms = clock_.NowMs();
    slot.out.stats.prefill_step = steps_.load() + 1;  // the step about to run
  }
  if (const auto piece = static_cast<size_t>(engine_->model_info().memory.prompt_call_tokens); piece > 0) {
    end = std::min(end, (slot.prefilled / piece + 1) * piece);  // a prompt call stays in one piece
  }
  for (size_t at : slot.checkpoint_at) {
    if (at > slot.prefilled) {
      end = std::min(end, at);
      break;
    }
  }
  for (size_t at = slot.prefilled; at < end; ++at) {
    batch->push_back({slot.sequence, static_cast<int32_t>(at), slot.prompt[at], at + 1 == slot.prompt.size(),
                      static_cast<int32_t>(slot.prompt.size())});
  }
  return true;
}

// Each slot in `items` and the index of its first item with logits: the last prompt token,
// or the pending token with its draft (whose logits follow it) behind.
std::vector<std::pair<EngineWorker::Slot*, int32_t>> EngineWorker::OutputsOf(
    const std::vector<engine::DecodeItem>& items) {
  std::vector<std::pair<Slot*, int32_t>> outputs;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].logits || (i > 0 && items[i - 1].sequence == items[i].sequence && items[i - 1].logits)) continue;
    outputs.emplace_back(slots_[items[i].sequence].get(), static_cast<int32_t>(i));
  }
  return outputs;
}

void EngineWorker::AfterDecode(const std::vector<engine::DecodeItem>& items,
                               const std::vector<std::pair<Slot*, int32_t>>& outputs) {
  // Record what is now in each sequence's memory.
  for (const auto& item : items) {
    Slot& s = *slots_[item.sequence];
    s.resident.push_back(item.token);
    if (!s.has_pending) s.prefilled = std::max(s.prefilled, static_cast<size_t>(item.position) + 1);
  }
  for (auto& s : slots_) {
    if (!s->busy || s->checkpoint_at.empty() || s->checkpoint_at.front() != s->prefilled) continue;
    s->checkpoint_at.erase(s->checkpoint_at.begin());
    const int64_t start_us = clock_.NowUs();
    auto state = engine_->SaveSequenceState(s->sequence);
    if (state.has_value()) {
      if (LogEnabled(LogLevel::kDebug)) {
        Log(LogLevel::kDebug, "checkpoint_saved",
            {{"tokens", std::to_string(s->prefilled)},
             {"bytes", std::to_string(state->size())},
             {"ms", std::to_string(static_cast<double>(clock_.NowUs() - start_us) / 1000.0)}});
      }
      checkpoints_.Put({s->prompt.begin(), s->prompt.begin() + static_cast<ptrdiff_t>(s->prefilled)}, std::move(*state));
    } else {
      Log(LogLevel::kWarn, "checkpoint_failed", {{"error", state.error().ToString()}});
    }
  }
  // Published before any token of this step is: a client that has seen a token sees a health
  // report that includes it.
  PublishHealth();
  for (auto& [slot, index] : outputs) {
    if (slot->Replaying()) {
      // Recomputing: the token that followed here was sampled before, and is fed back.
      slot->pending = slot->replay[slot->replayed++];
      slot->has_pending = true;
      if (!slot->Replaying()) {
        slot->replay.clear();
        slot->replayed = 0;
      }
      continue;
    }
    if (!slot->has_pending) {
      slot->prefill_end_ms = clock_.NowMs();
      // The prompt's last token: its logits serve an exact repeat while the memory holds the
      // prompt (a prefix cut anywhere: attention memory alone).
      if (engine_->model_info().memory.partial_truncation) slot->prompt_end = engine_->KeepOutput(index);
    }
    slot->has_pending = false;
    if (slot->draft.empty()) {
      Sample(*slot, {.index = index});
    } else {
      Verify(*slot, index);
    }
  }
}

// A failed step is retried one sequence at a time: the request whose tokens the engine
// refuses fails alone, with the engine's error, and every other one goes on.
void EngineWorker::RecoverFailedStep(const std::vector<engine::DecodeItem>& batch, const Status& error) {
  Log(LogLevel::kWarn, "decode_step_failed", {{"error", error.ToString()}, {"tokens", std::to_string(batch.size())}});
  std::map<int32_t, std::vector<engine::DecodeItem>> per_sequence;
  for (const auto& item : batch) per_sequence[item.sequence].push_back(item);
  for (auto& [sequence, items] : per_sequence) {
    Slot& slot = *slots_[sequence];
    // Undo whatever the failed call kept of this sequence. A recurrent state that moved on
    // cannot be undone: that request fails too.
    Status st = engine_->TruncateSequence(sequence, static_cast<int32_t>(slot.resident.size()));
    if (st.ok()) st = engine_->DecodeBatch(items);
    if (!st.ok()) {
      Fail(slot, st.code() == StatusCode::kResourceExhausted ? PoolFullError(slot) : st);
      continue;
    }
    AfterDecode(items, OutputsOf(items));
  }
}

}  // namespace llmd::sched
