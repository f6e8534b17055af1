#include "sched/step_policy.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace llmd::sched {

namespace {

bool SitsOut(const SlotView& view, const StepPolicyOptions& options, uint64_t step) {
  if (view.request_class != RequestClass::kBackground) return false;
  switch (options.background) {
    case BackgroundAction::kRun: return false;
    case BackgroundAction::kPause: return true;
    case BackgroundAction::kThrottle: return step % std::max<uint64_t>(options.throttle_period, 1) != 0;
  }
  return false;
}

// Which of a peer's own slots of one class decode is the policy's choice: it takes those that
// keep the decoding slots in fewer runs of consecutive sequences (with a KV stream per
// sequence, llama.cpp computes each run as a micro-batch of its own, another pass over the
// weights), swapping a running slot for a paused one of the same peer and class while that
// joins runs. The ranking across peers and classes stays as it was.
void KeepRunsTogether(const std::vector<SlotView>& busy, StepChoice* choice) {
  std::map<size_t, const SlotView*> view;
  for (const SlotView& v : busy) view[v.slot] = &v;
  auto alike = [&](size_t a, size_t b) {
    return view[a]->request_class == view[b]->request_class && view[a]->peer_uid == view[b]->peer_uid;
  };
  for (bool swapped = true; swapped;) {
    swapped = false;
    const size_t runs = Runs(choice->decode);
    for (size_t& paused : choice->paused) {
      if (!view[paused]->generating) continue;
      for (size_t& running : choice->decode) {
        if (!alike(paused, running)) continue;
        std::vector<size_t> trial = choice->decode;
        std::replace(trial.begin(), trial.end(), running, paused);
        if (Runs(trial) >= runs) continue;
        std::swap(paused, running);
        swapped = true;
        break;
      }
      if (swapped) break;
    }
  }
}

// With a pass over the weights for each run of consecutive sequences, a decode call of n
// sequences in r runs costs about r x (a pass) + n x (a sequence's token). Leaving a run of k
// sequences out of it raises the call's tokens a second exactly when k x r < n, whatever the
// two costs are (n / (r p + n t) < (n - k) / ((r - 1) p + (n - k) t) <=> k r < n). So a run
// made only of slots of a class below the step's highest, and smaller than the step's runs
// on average, sits the step out (paused: its memory and sampler stay in place, its tokens
// come in a later step with the width whole). The gap it stood beside is most often a lower
// slot whose next prompt waits while a person's request runs: 0 | 2 3 4 (4 interactive)
// decodes as 2 3 4, one pass instead of two. Of two such runs, the lower-ranked one first.
void LeaveOutSmallLowerRuns(const std::vector<SlotView>& busy, StepChoice* choice) {
  std::map<size_t, const SlotView*> view;
  for (const SlotView& v : busy) view[v.slot] = &v;
  for (;;) {
    std::vector<size_t> sorted = choice->decode;
    std::sort(sorted.begin(), sorted.end());
    const size_t runs = Runs(sorted);
    if (runs < 2) return;
    RequestClass top = RequestClass::kBackground;
    for (size_t slot : sorted) top = std::min(top, view[slot]->request_class);
    // Each run's slots; a candidate is all below `top` and small. The last in rank goes out.
    std::vector<std::vector<size_t>> candidates;
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i + 1;
      while (j < sorted.size() && sorted[j] == sorted[j - 1] + 1) ++j;
      const std::vector<size_t> run(sorted.begin() + static_cast<std::ptrdiff_t>(i),
                                    sorted.begin() + static_cast<std::ptrdiff_t>(j));
      const bool lower = std::all_of(run.begin(), run.end(), [&](size_t s) { return view[s]->request_class > top; });
      if (lower && run.size() * runs < sorted.size()) candidates.push_back(run);
      i = j;
    }
    if (candidates.empty()) return;
    // A run's rank: where its best-ranked slot stands in the decode list (ranked order).
    auto rank = [&](const std::vector<size_t>& run) {
      size_t best = choice->decode.size();
      for (size_t s : run) {
        best = std::min(best, static_cast<size_t>(std::find(choice->decode.begin(), choice->decode.end(), s) -
                                                  choice->decode.begin()));
      }
      return best;
    };
    const auto out = std::max_element(candidates.begin(), candidates.end(),
                                      [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    for (size_t s : *out) {
      choice->decode.erase(std::find(choice->decode.begin(), choice->decode.end(), s));
      choice->paused.push_back(s);
    }
  }
}

bool Holds(const std::vector<size_t>& list, size_t slot) { return std::find(list.begin(), list.end(), slot) != list.end(); }

// Whether a move of a `mover_class` slot may drop what the free sequence `f` caches.
bool MayDrop(const MoveCandidate& f, RequestClass mover_class) {
  return MayDropCache(f.request_class, f.tokens, mover_class);
}

// How `mover` gets into `target`'s sequence: the moves, in order, that clear it first and the
// mover's own, with the tokens they copy and the cached ones they drop; none where it cannot
// be cleared. A free sequence whose cache the mover may not drop has it moved aside to an empty
// free sequence; a slot sitting the step out (`occupied`) moves aside to the free sequence
// caching least of those whose cache its class may drop.
struct Entry {
  std::vector<SlotMove> moves;
  size_t copied = 0, dropped = 0;
};
std::optional<Entry> Enter(const MoveCandidate& mover, const MoveCandidate& target, bool occupied,
                           const std::vector<MoveCandidate>& free) {
  if (!occupied && MayDrop(target, mover.request_class)) {
    return Entry{{{mover.slot, target.slot}}, mover.tokens, target.tokens};
  }
  const MoveCandidate* aside = nullptr;
  for (const MoveCandidate& f : free) {
    if (f.slot == target.slot) continue;
    const bool fits = occupied ? MayDrop(f, target.request_class) : f.tokens == 0;
    if (fits && (aside == nullptr || f.tokens < aside->tokens)) aside = &f;
  }
  if (aside == nullptr) return std::nullopt;
  return Entry{{{target.slot, aside->slot}, {mover.slot, target.slot}}, mover.tokens + target.tokens, aside->tokens};
}

// The cheapest plan that leaves fewer runs than `runs_now`: compared by runs left, then tokens
// copied, then moves, then cached tokens dropped.
class BestPlan {
 public:
  explicit BestPlan(size_t runs_now) : runs_now_(runs_now) {}
  void Consider(size_t runs, const std::optional<Entry>& entry) {
    if (!entry || runs >= runs_now_) return;
    const Cost cost{runs, entry->copied, entry->moves.size(), entry->dropped};
    if (!moves_.empty() && cost >= cost_) return;
    moves_ = entry->moves;
    cost_ = cost;
  }
  const std::vector<SlotMove>& moves() const { return moves_; }

 private:
  using Cost = std::tuple<size_t, size_t, size_t, size_t>;
  size_t runs_now_;
  std::vector<SlotMove> moves_;
  Cost cost_;
};

// A move in the policy's own books: the step's lists and the views name the slot by its new
// index, its new sequence is no longer free and its old one is (the worker empties it).
void Relabel(const SlotMove& m, StepChoice* choice, std::vector<SlotView>* views, std::vector<MoveCandidate>* free) {
  choice->moves.push_back(m);
  for (auto* list : {&choice->decode, &choice->paused, &choice->prefill}) std::replace(list->begin(), list->end(), m.from, m.to);
  for (SlotView& v : *views) {
    if (v.slot == m.from) v.slot = m.to;
  }
  std::erase_if(*free, [&](const MoveCandidate& f) { return f.slot == m.to; });
  free->push_back({m.from, 0});
}

// A prompt of the step goes where its tokens will decode beside the others: where a free
// sequence joins the decoding runs and its own does not, it moves there first, its memory
// (the prefix it reused, what it computed) copied. So a job computed ahead, or moved aside
// for a person's request, does not decode apart from the rest for its whole answer.
void PlacePrompts(StepChoice* choice, std::vector<SlotView>* views, std::vector<MoveCandidate>* free) {
  const std::vector<size_t> prompts = choice->prefill;
  for (size_t slot : prompts) {
    const auto view = std::find_if(views->begin(), views->end(), [&](const SlotView& v) { return v.slot == slot; });
    if (view == views->end() || !view->movable) continue;
    const MoveCandidate prompt{slot, view->tokens, view->request_class};
    auto runs_at = [&](size_t at) {
      std::vector<size_t> with = choice->decode;
      with.push_back(at);
      return Runs(with);
    };
    BestPlan best(runs_at(slot));
    for (const MoveCandidate& f : *free) best.Consider(runs_at(f.slot), Enter(prompt, f, false, *free));
    const std::vector<SlotMove> plan = best.moves();  // Relabel changes `free`
    for (const SlotMove& m : plan) Relabel(m, choice, views, free);
  }
}

}  // namespace

int64_t SharedPrefillTimeBudget(double decode_call_ms, double prompt_ms_per_token, int64_t floor) {
  if (decode_call_ms <= 0 || prompt_ms_per_token <= 0) return 0;
  return std::max(floor, static_cast<int64_t>(decode_call_ms / prompt_ms_per_token));
}

size_t Runs(std::vector<size_t> sequences) {
  std::sort(sequences.begin(), sequences.end());
  size_t runs = 0;
  for (size_t i = 0; i < sequences.size(); ++i) runs += i == 0 || sequences[i] != sequences[i - 1] + 1 ? 1 : 0;
  return runs;
}

StepChoice ChooseStep(const std::vector<SlotView>& busy, const StepPolicyOptions& options, uint64_t step,
                      const std::vector<MoveCandidate>& free) {
  std::vector<const SlotView*> ranked;
  for (const SlotView& view : busy) {
    if (!view.waiting && (view.generating || view.prefilling)) ranked.push_back(&view);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const SlotView* a, const SlotView* b) {
    if (a->request_class != b->request_class) return a->request_class < b->request_class;
    return a->admitted < b->admitted;
  });
  // Each slot's turn within its peer and class: 0 for a peer's oldest.
  std::map<const SlotView*, size_t> turn;
  std::map<std::pair<RequestClass, std::optional<uint32_t>>, size_t> seen;
  for (const SlotView* view : ranked) turn[view] = seen[{view->request_class, view->peer_uid}]++;
  std::stable_sort(ranked.begin(), ranked.end(), [&](const SlotView* a, const SlotView* b) {
    if (a->request_class != b->request_class) return a->request_class < b->request_class;
    return turn[a] < turn[b];
  });
  StepChoice choice;
  // The width bounds the slots that decode. A prompt still to compute takes a place in it only
  // while interactive work runs, so that a person's steps hold nothing but the width's work;
  // lower prompts then share the step.
  const bool interactive_runs = std::any_of(ranked.begin(), ranked.end(), [&](const SlotView* v) {
    return v->request_class == RequestClass::kInteractive && !SitsOut(*v, options, step);
  });
  size_t running = 0;
  bool interactive_prompt = false;  // a person's prompt is computed this step
  // Only expected, none running: a chunk bounds no person's step, only the work an arrival's
  // stop throws away, so it is twice as long (kExpectedChunkFactor).
  choice.shared_prefill_tokens = options.shared_prefill_tokens * (interactive_runs ? 1 : kExpectedChunkFactor);
  if (interactive_runs && options.shared_prefill_cap > 0) {
    choice.shared_prefill_tokens = std::min(choice.shared_prefill_tokens, options.shared_prefill_cap);
  }
  for (const SlotView* view : ranked) {
    const bool takes_place = view->generating || interactive_runs;
    if ((takes_place && running >= options.decode_width) || SitsOut(*view, options, step)) {
      choice.paused.push_back(view->slot);
      continue;
    }
    if (takes_place) ++running;
    if (view->generating) choice.decode.push_back(view->slot);
    if (view->prefilling) {
      choice.prefill.push_back(view->slot);
      const bool below = view->request_class != RequestClass::kInteractive;
      interactive_prompt = interactive_prompt || !below;
      choice.prefill_shared.push_back(
          below && (interactive_runs || (options.interactive_expected && !view->fixed_chunks)));
    }
  }
  KeepRunsTogether(busy, &choice);
  if (!options.runs_cost_passes) return choice;
  std::vector<SlotView> views = busy;  // under the indexes the moves give them
  std::vector<MoveCandidate> spare = free;
  // A step that computes a person's prompt moves nothing: the copies would come before its
  // first token. The moves wait a step.
  if (!interactive_prompt && interactive_runs && choice.decode.size() >= options.decode_width) {
    std::vector<MoveCandidate> movable, idle;
    for (const SlotView& v : views) {
      if (!v.movable) continue;
      if (Holds(choice.decode, v.slot)) movable.push_back({v.slot, v.tokens, v.request_class});
      if (Holds(choice.paused, v.slot)) idle.push_back({v.slot, v.tokens, v.request_class});
    }
    for (const SlotMove& m : ChooseMoves(choice.decode, movable, idle, spare)) Relabel(m, &choice, &views, &spare);
  }
  if (!interactive_prompt) PlacePrompts(&choice, &views, &spare);
  LeaveOutSmallLowerRuns(views, &choice);
  return choice;
}

std::vector<SlotMove> ChooseMoves(const std::vector<size_t>& decode, const std::vector<MoveCandidate>& movable,
                                  const std::vector<MoveCandidate>& idle, const std::vector<MoveCandidate>& free) {
  BestPlan best(Runs(decode));
  for (const MoveCandidate& m : movable) {
    if (!Holds(decode, m.slot)) continue;
    auto consider = [&](const MoveCandidate& target, bool occupied) {
      std::vector<size_t> trial = decode;
      std::replace(trial.begin(), trial.end(), m.slot, target.slot);
      best.Consider(Runs(trial), Enter(m, target, occupied, free));
    };
    for (const MoveCandidate& f : free) consider(f, false);
    for (const MoveCandidate& o : idle) {
      if (!Holds(decode, o.slot)) consider(o, true);
    }
  }
  return best.moves();
}

bool MayAdmit(const Holder& job, const std::vector<Holder>& busy, size_t decode_width, size_t free_sequences) {
  size_t higher = 0, same_class = 0, own = 0;
  std::map<std::optional<uint32_t>, size_t> others;  // other peers' slots of its class
  for (const Holder& h : busy) {
    if (h.request_class < job.request_class) ++higher;
    if (h.request_class != job.request_class) continue;
    ++same_class;
    if (h.peer_uid == job.peer_uid) ++own;
    else ++others[h.peer_uid];
  }
  if (higher + same_class < decode_width) return true;
  // The first job past the width may take a spare sequence to compute its prompt ahead while
  // the width decodes, so that it decodes in the step after one of them ends; two sequences
  // stay free (one for a higher class, one for another peer's first job).
  if (higher + same_class == decode_width && free_sequences >= 3) return true;
  // Beyond the width, a peer behind another's many requests of its class may take a spare
  // sequence, as long as one stays free for a higher class: it ranks ahead of their later
  // slots (ChooseStep), which pause for it.
  if (free_sequences < 2) return false;
  size_t ahead = higher + own;
  for (const auto& [peer, n] : others) ahead += std::min(n, own + 1);
  return ahead < decode_width;
}

}  // namespace llmd::sched
