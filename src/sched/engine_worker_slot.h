// EngineWorker's per-sequence state and a new job's reuse plan: shared by the worker's files
// (engine_worker.cc: admission, steps, sampling; engine_worker_reuse.cc: prefix reuse and
// checkpoints; engine_worker_speculative.cc: drafts and their verification). Private to
// src/sched.
#ifndef LLMD_SCHED_ENGINE_WORKER_SLOT_H_
#define LLMD_SCHED_ENGINE_WORKER_SLOT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/stop_strings.h"
#include "chat/think_stripper.h"
#include "common/utf8.h"
#include "sched/draft_pacer.h"
#include "sched/engine_worker.h"

namespace llmd::sched {

// One KV sequence and the job running on it (engine thread only).
struct EngineWorker::Slot {
  int32_t sequence = 0;
  std::vector<engine::TokenId> resident;  // tokens in this sequence's memory, positions 0..n-1
  int64_t last_used = 0;
  // The class of the job that left `resident` as a cache (a free slot): a move by a lower
  // class keeps it (step_policy.h, MoveCandidate).
  RequestClass cached_class = RequestClass::kBackground;

  bool busy = false;
  bool paused = false;                    // sat out the last step for a higher class (StepPolicy)
  bool decoded = false;                   // has decoded in a step (a pause then is a preemption)
  // Its last decode call was stopped or skipped for a higher class's arrival: its next one
  // runs whole, so a stream of arrivals slows it but never stops it.
  bool stopped = false;
  // The step in which such a call was last put off, not started, behind an arrival that
  // outranked it (0: never): in the step right after, it runs whatever arrives.
  uint64_t postponed_step = 0;
  // A call of its prompt was stopped: the rest of its prompt goes in chunks of at most
  // shared_prefill_tokens (a call it must run whole: whole_chunk_tokens), so such a call holds
  // off the next arrival only briefly.
  bool short_chunks = false;
  // Gave its memory up to a slot that ranks above it in a full KV pool, or found no room of
  // its own: sits out until another job ends and frees memory.
  bool memory_wait = false;
  uint64_t job_id = 0;                    // distinguishes successive jobs on this slot
  Job job;
  std::string session_system;             // SessionTurn: the session's system prompt
  std::vector<engine::TokenId> prompt;
  size_t prefilled = 0;                   // prompt tokens in memory
  std::vector<size_t> cuts;               // PrefillCuts of `prompt` (ShapeMatters)
  std::vector<size_t> checkpoint_at;      // prompt lengths to save the recurrent state after
  // The logits `prompt`'s last token gave (Engine::KeepOutput), once its prefill ended: an
  // exact repeat of `prompt` samples from them while this memory still holds it (HoldsPromptEnd).
  std::shared_ptr<const engine::KeptOutput> prompt_end;
  // Waiting for another slot to prefill the prefix this job shares with it (wait_until
  // tokens), to copy it instead of computing it twice.
  Slot* wait_source = nullptr;
  uint64_t wait_job_id = 0;
  size_t wait_until = 0;
  std::unique_ptr<engine::Sampler> sampler;
  int64_t budget = 0;                     // tokens still allowed
  engine::TokenId pending = 0;            // sampled, not yet decoded
  bool has_pending = false;
  std::vector<engine::TokenId> draft;     // speculative: decoded after `pending` this step, to verify
  DraftPacer pacer;                       // whether drafting pays for this job
  Utf8StreamAssembler utf8;
  chat::ThinkStripper think;
  chat::StopStrings stops;
  engine::Completion out;
  size_t streamed_logprobs = 0;           // out.logprobs already sent in stream events
  bool prefill_started = false;
  int64_t prefill_start_ms = 0, prefill_end_ms = 0, first_token_ms = 0;
  std::chrono::steady_clock::time_point last_token;  // for the inter-token histogram
  // Parked while paused, under memory pressure: the sequence's memory in host memory
  // (Engine::ParkSequence) and the tokens it held; `resident` is empty meanwhile.
  std::optional<std::string> parked;
  std::vector<engine::TokenId> parked_tokens;
  // Recomputing after its memory was dropped: the tokens to feed back in order instead of
  // sampling (those generated before, then the pending one); `replayed` of them fed so far.
  std::vector<engine::TokenId> replay;
  size_t replayed = 0;
  bool Replaying() const { return replayed < replay.size(); }
  // Has prompt tokens still to compute (no token pending to decode).
  bool Prefilling() const { return !has_pending && prefilled < prompt.size(); }
};

// Where a new job's prompt goes and what it reuses.
struct EngineWorker::ReusePlan {
  Slot* target = nullptr;
  Slot* source = nullptr;          // the slot whose memory holds the prefix (target: its own)
  size_t keep = 0;                 // prompt tokens reused
  const Checkpoint* checkpoint = nullptr;  // the recurrent state after `keep` tokens
  const PinnedPrefix* pinned = nullptr;    // or a pinned prefix of `keep` tokens, put in whole
  // keep is the whole prompt (an exact repeat): the logits of its last token, kept by `source`.
  std::shared_ptr<const engine::KeptOutput> prompt_end;
  size_t best_common = 0;          // the longest prefix any slot shares (for the miss count)
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_ENGINE_WORKER_SLOT_H_
