// DraftGovernor: whether drafting pays for a whole step, measured. Each slot's DraftPacer
// judges acceptance, but acceptance alone does not say whether a draft pays: verifying costs
// what the hardware makes it cost. On a GPU a verified token costs almost nothing; on a
// 2-core CPU, four streams each verifying a draft of 4 make a step of 20 tokens that takes
// about three times as long as a step of 4, and memory that splits ragged batches (separate
// KV streams, recurrent state) decodes a step whose sequences verify drafts of unequal length
// in several passes over the weights. So the governor measures: for each number of generating
// sequences, the time per generated token of steps with drafts and of steps without (steps
// that also prefill are not counted), and lets the step draft only when drafting has been the
// faster. The side not chosen is measured again for kTrySteps steps every kTryEvery steps, so a
// change (longer contexts, other prompts, a busier machine) is followed.
//
// Thread-safety: none (the worker's engine thread).
#ifndef LLMD_SCHED_DRAFT_GOVERNOR_H_
#define LLMD_SCHED_DRAFT_GOVERNOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llmd::sched {

class DraftGovernor {
 public:
  static constexpr int32_t kTryEvery = 32;  // steps on the chosen side between tries of the other
  static constexpr int32_t kTrySteps = 2;
  static constexpr int32_t kMinSamples = 3;  // steps measured before a side is judged
  static constexpr double kWeight = 0.125;   // of the newest step in a side's running averages

  // Whether the next step, with `generating` sequences generating, may draft.
  bool MayDraft(size_t generating);
  // A step with `generating` sequences and no prompt tokens took `us` microseconds and gave
  // `tokens` tokens; `drafted`: it verified at least one draft.
  void OnStep(size_t generating, bool drafted, int64_t us, int64_t tokens);

  // The running microseconds per token of one side (0 until measured); for tests and logs.
  double us_per_token(size_t generating, bool drafted) const;

 private:
  // Running averages of a step's time and of its tokens, kept apart: a draft keeps nothing or
  // several tokens, and an average of per-step ratios would weigh the steps that kept nothing
  // far too much.
  struct Side {
    double us = 0, tokens = 0;
    int32_t samples = 0;
    double us_per_token() const { return tokens > 0 ? us / tokens : 0; }
  };
  struct ForBatchSize {
    Side with_drafts, without;
    int32_t since_try = 0;  // steps on the chosen side since the other was last tried
    int32_t trying = 0;     // steps of the other side still to go
  };
  ForBatchSize& For(size_t generating);

  std::vector<ForBatchSize> by_size_;  // by the number of generating sequences
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DRAFT_GOVERNOR_H_
