#include "sched/draft_pacer.h"

#include <algorithm>

namespace llmd::sched {

void DraftPacer::OnVerified(int32_t drafted, int32_t accepted) {
  if (drafted <= 0) return;
  drafted_ += drafted;
  accepted_ += accepted;
  const bool fruitless_twice = doubting_ && accepted_ == 0;
  if (!probing_ && !fruitless_twice && drafted_ < kJudgeAfter) {
    doubting_ = accepted == 0;
    return;
  }
  const bool pays = accepted_ >= kMinAcceptance * drafted_;
  drafted_ = accepted_ = 0;
  doubting_ = false;
  if (pays) {
    probing_ = false;
    pause_ = kFirstPause;
    return;
  }
  // A failed probe waits longer next time.
  if (probing_) pause_ = std::min(kMaxPause, pause_ * 2);
  pause_left_ = pause_;
  probing_ = true;
}

}  // namespace llmd::sched
