// EngineWorker's reply assembler: each sampled token checked (end, grammar dead end, draft
// verdict), turned into text (UTF-8, think block, stop strings) and sent; a finished job's
// stats and session recorded, and its slot made free.
#include <chrono>
#include <random>
#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

void EngineWorker::Sample(Slot& slot, const engine::Output& at, DraftCheck* check) {
  engine::GenerationStats& st = slot.out.stats;
  engine::TokenId token = slot.sampler->Sample(at);
  if (token == engine::Sampler::kNoToken) {
    // The grammar allows no token here (a dead end): the reply ends with what it allowed.
    Log(LogLevel::kWarn, "grammar_dead_end", {{"generated", std::to_string(st.generated_tokens)}});
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  if (check != nullptr) {
    const auto& synthetic = engine_->model_info().speculative.synthetic_acceptance;
    if (check->position < synthetic.size()) {
      // Benchmarks only: the guess is taken or refused at random, whatever the target computed.
      check->accepted = !engine_->IsEndOfGeneration(check->guess) &&
                        std::uniform_real_distribution<double>(0.0, 1.0)(synthetic_rng_) < synthetic[check->position];
      if (check->accepted) token = check->guess;
    } else {
      check->accepted = token == check->guess;
    }
    if (check->accepted) ++st.accepted_draft_tokens;
  }
  ++sampled_tokens_;
  const int64_t now = clock_.NowMs();
  const auto now_precise = std::chrono::steady_clock::now();
  if (st.generated_tokens == 0 && slot.first_token_ms == 0) {
    slot.first_token_ms = now;
    st.first_token_step = steps_.load();
    st.ttft_ms = static_cast<double>(now - slot.job.submitted_ms);
    st.prefill_ms = static_cast<double>(slot.prefill_end_ms - slot.prefill_start_ms);
    metrics_.ttft_seconds.Observe(st.ttft_ms / 1000.0);
  } else {
    metrics_.inter_token_seconds.Observe(std::chrono::duration<double>(now_precise - slot.last_token).count());
  }
  slot.last_token = now_precise;
  if (engine_->IsEndOfGeneration(token)) {
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  slot.out.tokens.push_back(token);
  ++st.generated_tokens;
  if (const int32_t top = slot.job.options.sampling.top_logprobs; top >= 0) {
    slot.out.logprobs.push_back(slot.sampler->Logprob(at, token, top));
  }
  std::string text = slot.utf8.Push(engine_->TokenText(token));
  if (slot.job.options.strip_think) text = slot.think.Push(text);
  Emit(slot, slot.stops.Push(text));
  if (slot.stops.stopped()) {
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  if (--slot.budget <= 0) {
    Finish(slot, engine::FinishReason::kLength);
    return;
  }
  slot.pending = token;
  slot.has_pending = true;
}

void EngineWorker::Emit(Slot& slot, std::string text, bool last) {
  const bool new_logprobs = slot.streamed_logprobs < slot.out.logprobs.size();
  if (text.empty() && !(last && new_logprobs)) return;
  slot.out.text += text;
  if (!slot.job.stream) return;
  JobEvent event = JobEvent::Text(std::move(text));
  // The log-probabilities of the tokens sampled since the last event travel with it.
  event.logprobs.assign(slot.out.logprobs.begin() + static_cast<std::ptrdiff_t>(slot.streamed_logprobs),
                        slot.out.logprobs.end());
  slot.streamed_logprobs = slot.out.logprobs.size();
  event.parser = slot.out.parser;
  slot.job.channel->Push(std::move(event));
}

void EngineWorker::Finish(Slot& slot, engine::FinishReason reason) {
  engine::GenerationStats& st = slot.out.stats;
  st.finish_reason = reason;
  st.dropped_tokens = slot.job.dropped_tokens;
  st.dropped_turns = slot.job.dropped_turns;
  if (slot.first_token_ms != 0) st.decode_ms = static_cast<double>(clock_.NowMs() - slot.first_token_ms);
  std::string tail = slot.utf8.Finish();
  if (slot.job.options.strip_think) tail = slot.think.Push(tail) + slot.think.Finish();
  tail = slot.stops.Push(tail);
  Emit(slot, tail + slot.stops.Finish(), /*last=*/true);
  RecordFinished(st);
  if (auto* turn = std::get_if<SessionTurn>(&slot.job.prompt)) {
    // The turn joins the session's history: exactly the tokens fed and generated.
    StoredSession session{slot.session_system, slot.prompt, turn->turn_starts};
    session.tokens.insert(session.tokens.end(), slot.out.tokens.begin(), slot.out.tokens.end());
    sessions_.Record(turn->session, std::move(session));
  }
  slot.job.channel->Push(JobEvent::Done(std::move(slot.out)));
  EndJob(slot);
}

void EngineWorker::Fail(Slot& slot, const Status& status) {
  slot.job.channel->Push(JobEvent::Error(status));
  // The memory state of a failed step is unknown: start this sequence over next time.
  if (Status cleared = engine_->TruncateSequence(slot.sequence, 0); !cleared.ok()) {
    Log(LogLevel::kError, "sequence_clear_failed", {{"error", cleared.ToString()}});
  }
  slot.resident.clear();
  EndJob(slot);
}

void EngineWorker::EndJob(Slot& slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    StartIdleTime(slot.job.keep_alive_ms);  // before the job leaves running_: whoever sees it gone sees this
    std::erase(running_, slot.job.channel);
    // Its sequence is free for the next admission: a job that arrives before then stands as
    // its peer's first (Submit) if this was the peer's only one.
    const auto held = std::find_if(admission_holders_.begin(), admission_holders_.end(), [&](const Holder& h) {
      return h.request_class == slot.job.request_class && h.peer_uid == slot.job.peer_uid;
    });
    if (held != admission_holders_.end()) {
      admission_holders_.erase(held);
      ++admission_free_;
    }
  }
  ForgetParked(slot);
  slot.busy = false;
  slot.paused = false;
  slot.decoded = false;
  slot.stopped = false;
  slot.short_chunks = false;
  slot.postponed_step = 0;
  // Its memory is free now: the slots that waited for room try again.
  for (auto& s : slots_) s->memory_wait = false;
  slot.has_pending = false;
  slot.draft.clear();
  slot.pacer = DraftPacer();
  slot.prefill_started = false;
  slot.first_token_ms = 0;
  slot.wait_source = nullptr;
  slot.checkpoint_at.clear();
  slot.sampler.reset();
  slot.utf8 = Utf8StreamAssembler();
  slot.think = chat::ThinkStripper();
  slot.out = engine::Completion();
  slot.streamed_logprobs = 0;
  slot.cached_class = slot.job.request_class;
  slot.job = Job{.channel = nullptr};  // no new channel for an empty slot
}

}  // namespace llmd::sched
