// EngineWorker's moves: where each sequence has a KV stream of its own, llama.cpp computes
// each run of consecutive sequence ids of a decode call as a micro-batch of its own, a pass
// over the weights. A request left alone at the end of the sequences when the background
// request beside it ends (0 1 2 | 4, a person's request on 4) costs a pass every step while
// it runs: the background request's successor cannot fill the gap, since lower prompts take
// a place in the width while interactive work runs (its prompt waits in the gap, computed
// ahead, or in the queue). So the step policy moves a decoding slot into the gap, the one
// waiting there first moving aside (ChooseMoves), and the worker copies each one's memory
// (Engine::CopySequence, through the per-sequence state API: only its cells); the slot, with
// its job, sampler and pending token, takes the new sequence's index.
//
// bench/sequence_move_probe, 0.6B Q4_0, 2 threads: one token each for 0,1,2,4 took 93.8 ms
// against 72.5 for 0,1,2,3 (the gap: 21 ms a step); a move of 128 tokens took 8 ms, 512
// tokens 60 ms, 2,048 tokens 240 ms. A bigger model's pass grows faster than its KV per
// token, so a move pays sooner there.
#include <algorithm>
#include <string>
#include <utility>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

namespace {

// The most tokens a moving slot may hold: a copy that pays back within three steps of the gap
// on the smallest model above.
constexpr size_t kMaxMoveTokens = 512;
// And the fewest a decoding one must still be allowed to generate for the copy to pay.
constexpr int64_t kMinMoveBudget = 4;

}  // namespace

bool EngineWorker::MayMove(const Slot& slot) {
  return !slot.parked && slot.resident.size() <= kMaxMoveTokens && (!slot.has_pending || slot.budget >= kMinMoveBudget);
}

void EngineWorker::ApplyMoves(StepChoice* choice) {
  for (size_t k = 0; k < choice->moves.size(); ++k) {
    if (Move(choice->moves[k])) continue;
    // This move, and those after it (a move aside makes room for the next), are undone in the
    // step's lists: the slots decode or sit out where they are.
    for (size_t j = choice->moves.size(); j-- > k;) {
      const SlotMove& m = choice->moves[j];
      for (auto* list : {&choice->decode, &choice->paused, &choice->prefill}) std::replace(list->begin(), list->end(), m.to, m.from);
    }
    choice->moves.resize(k);
    return;
  }
}

bool EngineWorker::Move(const SlotMove& move) {
  Slot& from = *slots_[move.from];
  Slot& to = *slots_[move.to];
  const int64_t start_us = clock_.NowUs();
  to.resident.clear();  // the copy drops what `to` cached, whether it succeeds or not
  to.prompt_end.reset();
  if (Status st = engine_->CopySequence(from.sequence, to.sequence); !st.ok()) {
    Log(LogLevel::kDebug, "sequence_move_failed", {{"error", st.ToString()}});
    return false;
  }
  // The two slots trade places: the free one takes the old sequence, which is emptied (where
  // that fails, it keeps the tokens as any free slot keeps its last job's, a prefix to reuse).
  to.resident = from.resident;
  if (engine_->TruncateSequence(from.sequence, 0).ok()) to.resident.clear();
  std::swap(slots_[move.from], slots_[move.to]);
  slots_[move.from]->sequence = static_cast<int32_t>(move.from);
  slots_[move.to]->sequence = static_cast<int32_t>(move.to);
  ++sequence_moves_;
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug, "sequence_moved",
        {{"from", std::to_string(move.from)},
         {"to", std::to_string(move.to)},
         {"tokens", std::to_string(slots_[move.to]->resident.size())},
         {"ms", std::to_string(static_cast<double>(clock_.NowUs() - start_us) / 1000.0)}});
  }
  return true;
}

}  // namespace llmd::sched
