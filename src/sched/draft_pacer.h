// DraftPacer: whether drafting pays for one sequence. Speculative decoding verifies each
// draft token at the price of one more output row of the target's step; when the target
// keeps rejecting them (a draft model that guesses badly, text with no repeats for n-gram
// lookup), that price buys nothing. The pacer watches the acceptance of the last drafts and,
// when it is too low, stops drafting for a while; then it probes with a short draft. Each
// probe that fails doubles the pause, up to kMaxPause generated tokens, and one that pays
// resumes drafting. One draft that keeps nothing is not judged alone (at an acceptance of
// 75 % a token, a quarter of drafts keep nothing): the next draft is a short one, and only
// when that keeps nothing too is drafting judged not to pay; otherwise a judgement waits for
// kJudgeAfter draft tokens. So a drafter that never guesses right (a draft model unrelated to
// the target) costs a draft, a short one and the probes: a few percent of a 128-token reply
// on a 2-core CPU, less of a longer one (docs/benchmarks.md).
//
// Thread-safety: none (one per slot, engine thread).
#ifndef LLMD_SCHED_DRAFT_PACER_H_
#define LLMD_SCHED_DRAFT_PACER_H_

#include <cstdint>
#include <limits>

namespace llmd::sched {

class DraftPacer {
 public:
  // Below this share of accepted draft tokens drafting is judged not to pay.
  static constexpr double kMinAcceptance = 0.25;
  // Draft tokens seen before a judgement. A probe, and a short draft after one that kept
  // nothing, are judged at once when they keep nothing too.
  static constexpr int32_t kJudgeAfter = 8;
  static constexpr int32_t kFirstPause = 32, kMaxPause = 1024;  // generated tokens
  static constexpr int32_t kProbeTokens = 2;  // a probe's (or a doubted) draft: cheap to verify

  bool ShouldDraft() const { return pause_left_ == 0; }
  // The longest draft worth verifying now.
  int32_t max_tokens() const {
    return probing_ || doubting_ ? kProbeTokens : std::numeric_limits<int32_t>::max();
  }
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
  bool doubting_ = false;               // the last draft kept nothing: the next is short
  int32_t pause_ = kFirstPause;
  int32_t pause_left_ = 0;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DRAFT_PACER_H_
