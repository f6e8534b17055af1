#include "sched/draft_pacer.h"

#include <algorithm>

namespace llmd::sched {

bool DraftPacer::Pays() const {
  if (accepted_ == 0 && drafts_ >= kFruitlessDrafts) return false;
  return drafted_ < kJudgeAfter || accepted_ >= kMinAcceptance * drafted_;
}

void DraftPacer::OnVerified(int32_t drafted, int32_t accepted) {
  if (drafted <= 0) return;
  ++drafts_;
  drafted_ += drafted;
  accepted_ += accepted;
  const bool pays = probing_ ? accepted > 0 : Pays();
  if (pays) {
    if (probing_) pause_ = kFirstPause;
    probing_ = false;
    if (drafted_ > kForgetAfter) {
      drafted_ /= 2;
      accepted_ /= 2;
    }
    return;
  }
  // A failed probe waits longer next time.
  if (probing_) pause_ = std::min(kMaxPause, pause_ * 2);
  pause_left_ = pause_;
  probing_ = true;
  drafts_ = 0;
  drafted_ = accepted_ = 0;
}

}  // namespace llmd::sched
