// DraftPacer: whether drafting pays for one sequence. Speculative decoding verifies each
// draft token at the price of one more output row of the target's step (on a 2-core CPU, a
// draft token costs about a third of a plain step); when the target keeps rejecting them (a
// draft model that guesses badly, text with no repeats for n-gram lookup), that price buys
// nothing.
//
// Acceptance is bursty: a draft token survives only if every one before it did, so at 60 %
// a token (llama-server's synthetic length 2.5) 40 % of drafts keep nothing. The pacer
// therefore judges the share of accepted tokens over many drafts, not over the last one or two:
//  - a drafter that has kept nothing at all in kFruitlessDrafts drafts (a full one, then
//    short ones of kProbeTokens: they tell as much about the first token and cost less) does
//    not pay;
//  - one that keeps under kMinAcceptance of its tokens over at least kJudgeAfter of them does
//    not pay either (the running share forgets slowly: it halves past kForgetAfter tokens).
// Then drafting stops for a pause; after it, a probe of kProbeTokens decides: one that keeps
// nothing doubles the pause (up to kMaxPause generated tokens), one that keeps a token resumes
// drafting. A drafter that never guesses right costs 3 drafts and the probes, 8 draft tokens
// in a 128-token reply: 0.99x of speculation off on a 2-core CPU (docs/benchmarks.md).
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
  static constexpr int32_t kJudgeAfter = 16;   // draft tokens before the share is judged
  static constexpr int32_t kForgetAfter = 64;  // draft tokens the running share remembers fully
  static constexpr int32_t kFruitlessDrafts = 3;
  static constexpr int32_t kFirstPause = 32, kMaxPause = 1024;  // generated tokens
  static constexpr int32_t kProbeTokens = 1;  // a probe's (or a doubted) draft

  bool ShouldDraft() const { return pause_left_ == 0; }
  // The longest draft worth verifying now: a short one while the drafter has kept nothing.
  int32_t max_tokens() const {
    return probing_ || (drafts_ > 0 && accepted_ == 0) ? kProbeTokens : std::numeric_limits<int32_t>::max();
  }
  // A token generated without a draft (while paused, or with nothing to draft).
  void OnTokenWithoutDraft() {
    if (pause_left_ > 0) --pause_left_;
  }
  // The target verified a draft of `drafted` tokens and kept the first `accepted`.
  void OnVerified(int32_t drafted, int32_t accepted);
  int32_t pause() const { return pause_; }

 private:
  bool Pays() const;

  // Since drafting last (re)started; `drafted_` and `accepted_` halve past kForgetAfter.
  int32_t drafts_ = 0;
  double drafted_ = 0, accepted_ = 0;
  bool probing_ = false;  // the last pause ended: the next draft decides
  int32_t pause_ = kFirstPause;
  int32_t pause_left_ = 0;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DRAFT_PACER_H_
