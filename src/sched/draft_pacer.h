// DraftPacer: whether drafting pays for one sequence. Speculative decoding verifies each
// draft token at the price of one more output row of the target's step; when the target
// keeps rejecting them (a draft model that guesses badly, text with no repeats for n-gram
// lookup), that price buys nothing. The pacer watches the acceptance of the last drafts and,
// when it is too low, stops drafting for a while; each probe that fails doubles the pause, up
// to kMaxPause generated tokens, and one that pays resumes drafting.
//
// Thread-safety: none (one per slot, engine thread).
#ifndef LLMD_SCHED_DRAFT_PACER_H_
#define LLMD_SCHED_DRAFT_PACER_H_

#include <cstdint>

namespace llmd::sched {

class DraftPacer {
 public:
  // Below this share of accepted draft tokens drafting is judged not to pay.
  static constexpr double kMinAcceptance = 0.25;
  // Draft tokens seen before the first judgement, so a single unlucky draft does not stop it.
  static constexpr int32_t kJudgeAfter = 8;
  static constexpr int32_t kFirstPause = 16, kMaxPause = 512;  // generated tokens

  bool ShouldDraft() const { return pause_left_ == 0; }
  // A token generated without a draft (while paused, or with nothing to draft).
  void OnTokenWithoutDraft() {
    if (pause_left_ > 0) --pause_left_;
  }
  // One verified draft: `drafted` tokens, `accepted` of them taken.
  void OnVerified(int32_t drafted, int32_t accepted);

  int32_t pause() const { return pause_; }  // the next pause's length (tests)

 private:
  int32_t drafted_ = 0, accepted_ = 0;  // since the last judgement
  bool probing_ = false;                // the last pause ended: the next draft decides
  int32_t pause_ = kFirstPause;
  int32_t pause_left_ = 0;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DRAFT_PACER_H_
