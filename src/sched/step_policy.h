// StepPolicy: the one place that decides what goes into a decode step. The worker describes
// its busy slots; the policy answers which of them decode, which prefill and in what order,
// which sit this step out (paused, their memory kept in place), and how many prompt tokens a
// lower class may add beside an interactive one.
//
// The rules:
//  - At most `decode_width` slots decode in a step; the worker keeps more sequences than that,
//    so a higher-class job always finds one. The runnable slots are ranked by class, then by
//    their turn within their peer (a peer's first slot before anyone's second), then by
//    admission order, and the first decode_width that have a token to decode do; the rest
//    are paused. So a peer with many requests in flight gives way to another peer of the same
//    class, as a higher class does. A paused slot resumes exactly where it stopped: nothing of
//    its memory or its sampler moves.
//    Which of one peer's own slots of a class run is the policy's to choose: those that keep
//    the decoding sequences in fewer runs of consecutive ids (llama.cpp computes each run as a
//    micro-batch of its own where each sequence has a KV stream).
//    Where runs cost a pass each (`runs_cost_passes`) and a higher class decodes, a run made
//    only of lower-class slots sits the step out while it holds fewer sequences than the
//    step's runs do on average (LeaveOutSmallLowerRuns): the person's step is shorter and
//    the lower class gets more tokens a second over the steps. Before that, where a free
//    sequence joins runs while a higher class decodes and the width is full (no prompt takes
//    the gap until one of them ends), a decoding slot moves into it, the slot sitting out in
//    it moving aside first (ChooseMoves); and a prompt of the step moves to a free sequence
//    where it will decode beside the others (PlacePrompts). Only slots the worker says may
//    move (SlotView::movable: their memory is cheap to copy) move.
//  - A prompt still to compute takes no place in the width while no interactive slot runs: it
//    is computed beside the slots that decode, and a job admitted past the width (MayAdmit)
//    has its prompt ready when one of them ends, so the width stays full while jobs come and
//    go. While interactive work runs it does take a place, so a person's steps hold only the
//    width's work (the lowest-ranked prompt pauses, as a decoding slot does).
//  - Prompts prefill in rank order, so an interactive prompt goes first; and the step's calls
//    run in the order of Standing (below).
//  - While an interactive slot runs, the prompt chunks of lower classes share at most
//    `shared_prefill_tokens` a step between them, so a long background prompt never stalls a
//    voice answer for a whole batch of prefill. While one is only expected (interactive work
//    was seen lately or the config grants it), they share kExpectedChunkFactor times that: a
//    lower call that an arriving voice request stops (EngineWorker::Step) loses little, and a
//    chunk twice as long costs less per token. A prompt whose chunks cannot be cut shorter
//    (fixed_chunks) shares only while interactive work runs.
//  - Background work is paused or throttled (one step in `throttle_period`) by the device's
//    condition (battery, heat); interactive and normal work always runs.
//
// Pure: no engine, no clock, no locks; tested by itself (step_policy_test.cc).
#ifndef LLMD_SCHED_STEP_POLICY_H_
#define LLMD_SCHED_STEP_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/request_class.h"
#include "sched/device_conditions.h"

namespace llmd::sched {

// The shared prompt budget while interactive work is expected but none runs, in
// `shared_prefill_tokens`. 8 background requests beside a voice request every 1.5 s (0.6B Q4_0,
// 2 threads, 45 s traced): with 64-token chunks the background prompts took 4.1-4.5 ms a token
// and 10.6k tokens were computed, with 128 3.6-4.0 ms and 11.5k, the voice TTFT the same (p50
// 78 vs 66 ms, p95 93 vs 98) and the work lost to stops the same (1.7 vs 1.8 s).
inline constexpr int64_t kExpectedChunkFactor = 2;

struct StepPolicyOptions {
  size_t decode_width = 4;             // slots that run in one step
  int64_t shared_prefill_tokens = 64;  // lower classes' prompt tokens per step beside interactive work
  // > 0: at most this many of them while interactive work runs (the worker's time budget,
  // SharedPrefillTimeBudget); 0: shared_prefill_tokens alone.
  int64_t shared_prefill_cap = 0;
  bool interactive_expected = false;   // share the step as if an interactive slot ran
  BackgroundAction background = BackgroundAction::kRun;
  uint64_t throttle_period = 4;        // kThrottle: background runs one step in this many
  // Each run of consecutive sequence ids in a decode call is a pass over the weights of its
  // own (engine MemoryCapabilities::stream_per_sequence).
  bool runs_cost_passes = false;
};

// A busy slot, as the policy sees it.
struct SlotView {
  size_t slot = 0;            // the worker's index
  RequestClass request_class = RequestClass::kNormal;
  std::optional<uint32_t> peer_uid;  // whose it is (unknown: one peer of its own)
  uint64_t admitted = 0;      // admission order: lower came first
  bool generating = false;    // has a token to decode
  bool prefilling = false;    // has prompt tokens to prefill
  bool waiting = false;       // waits for another slot's shared prefix: neither runs nor is paused
  // Its prompt chunks cannot be cut shorter than its prefill cuts (a recurrent model): it
  // shares the step only while an interactive slot runs, and goes whole when one is expected.
  bool fixed_chunks = false;
  // Its memory may be copied to another sequence (runs_cost_passes): `tokens` held, which a
  // move copies.
  bool movable = false;
  size_t tokens = 0;
};

// A slot moved to another sequence, its memory copied there and its job, sampler and pending
// token (or its free slot's cache) with it, so that the step's decoding sequences make fewer
// runs.
struct SlotMove {
  size_t from = 0;
  size_t to = 0;
};

// A slot a move may take (`tokens`: what its memory holds, which the move copies;
// `request_class`: its job's), or a free sequence (`tokens`: the prefix cached there;
// `request_class`: that of the job that left it). A move drops a free sequence's cache where a
// job of the mover's class or lower left it; a higher class's cache (the last voice request's,
// which the next one reuses) moves aside to an empty free sequence first, or the sequence is
// not taken.
struct MoveCandidate {
  size_t slot = 0;
  size_t tokens = 0;
  RequestClass request_class = RequestClass::kBackground;
};

struct StepChoice {
  std::vector<size_t> decode;   // slots whose pending token (and draft) this step decodes
  std::vector<size_t> prefill;  // slots whose prompt chunks go in, in this order
  std::vector<size_t> paused;   // runnable slots that sit this step out
  // For each slot of `prefill`: whether its chunk draws on the shared budget (a class below
  // interactive work), which all such chunks of the step draw on together.
  std::vector<bool> prefill_shared;
  int64_t shared_prefill_tokens = 0;
  // Slots to move, in order, before the step runs; the lists above already name them by their
  // new indexes.
  std::vector<SlotMove> moves;
};

// The lower classes' prompt tokens that fit beside a person's decode call in its own time:
// `decode_call_ms` / `prompt_ms_per_token`, at least `floor`; 0 (no cap) while either cost is
// unmeasured. A token budget alone is the machine's speed in disguise: 64 prompt tokens ran
// 450 ms beside a 45 ms decode call on a 2-core VM (0.6B Q4_0), so each of the person's
// tokens waited ten times as long, and their 8-token answer took 3.0-3.5 s at the p95 under
// load; with this bound a step takes at most about twice the person's decode.
int64_t SharedPrefillTimeBudget(double decode_call_ms, double prompt_ms_per_token, int64_t floor);

// The runs of consecutive ids among `sequences` (any order): with a KV stream per sequence,
// llama.cpp computes each run of a decode call as a micro-batch of its own, a pass over the
// weights.
size_t Runs(std::vector<size_t> sequences);

// Where runs cost a pass each (runs_cost_passes): the moves, in order, that leave `decode` in
// the fewest runs, if fewer than now. A slot of `movable` (slots of `decode`) moves into a
// free sequence, or into one held by a slot that sits the step out (of `idle`), which first
// moves to a free sequence outside the step's: typically a background job whose prompt waits
// for a person's request to end, computed ahead in the sequence its predecessor left. Of
// plans alike, the one copying the fewest tokens, then the one with fewer moves, then the one
// dropping the fewest cached ones (MoveCandidate says which caches may be dropped). The common
// case: a person's request decodes on 4 after the background request on 3 ended, the next
// one's prompt waiting on 3 (or 3 free), and 0 1 2 | 4 becomes 0 1 2 3, one pass instead of two.
std::vector<SlotMove> ChooseMoves(const std::vector<size_t>& decode, const std::vector<MoveCandidate>& movable,
                                  const std::vector<MoveCandidate>& idle, const std::vector<MoveCandidate>& free);

// Where a job stands against a running call it might stop, and so the order of a step's calls
// (EngineWorker::RunCalls): by class; within a class a peer's first job before any peer's later
// ones, as ChooseStep ranks them; and of the first jobs, one whose prompt is still to compute
// before one that decodes. So a peer with nothing running gets its first token without waiting
// for another peer's decode call (its arrival stops one that runs), and the other peer's next
// token comes a prompt call later. Lower stands higher; kNoStanding is below every job.
inline int Standing(RequestClass c, bool peers_first, bool prompt) {
  return ClassIndex(c) * 3 + (!peers_first ? 2 : prompt ? 0 : 1);
}
inline constexpr int kNoStanding = kRequestClasses * 3;

// `step`: the number of the step about to run (for throttling). `free`: the sequences no job
// holds, with the tokens each caches (for a move).
StepChoice ChooseStep(const std::vector<SlotView>& busy, const StepPolicyOptions& options, uint64_t step,
                      const std::vector<MoveCandidate>& free = {});

// Whether a job of `taker` class may drop the `cached_tokens` a free sequence caches, which a
// job of `cached_class` left: only a cache of its own class or lower. A higher class's (the
// last voice request's prompt, which the next one reuses) is kept: a move sets it aside, a new
// job takes another sequence first (EngineWorker::PlanReuse).
inline bool MayDropCache(RequestClass cached_class, size_t cached_tokens, RequestClass taker) {
  return cached_tokens == 0 || ClassIndex(cached_class) >= ClassIndex(taker);
}

// A busy slot, or a job about to take one, as admission sees it.
struct Holder {
  RequestClass request_class = RequestClass::kNormal;
  std::optional<uint32_t> peer_uid;
};

// Whether a job may take one of `free_sequences` now, given who holds the busy ones: while
// fewer than decode_width slots of its class or higher are busy (a lower one is paused for it
// if need be); as the first one past them, to compute its prompt ahead, while two sequences
// stay free; or, with a sequence left free for a higher class, while fewer than decode_width
// would rank ahead of it in a step (ChooseStep: a peer's first slot before another's
// second), so another peer's later slot of its class pauses for it.
bool MayAdmit(const Holder& job, const std::vector<Holder>& busy, size_t decode_width, size_t free_sequences);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_STEP_POLICY_H_
