#include "sched/draft_governor.h"

namespace llmd::sched {

DraftGovernor::ForBatchSize& DraftGovernor::For(size_t generating) {
  if (by_size_.size() <= generating) by_size_.resize(generating + 1);
  return by_size_[generating];
}

bool DraftGovernor::MayDraft(size_t generating) {
  ForBatchSize& f = For(generating);
  // Drafting is measured first (the pacers stop it soon where nothing is accepted), then the
  // plain step.
  if (f.with_drafts.samples < kMinSamples) return true;
  if (f.without.samples < kMinSamples) return false;
  const bool drafting_faster = f.with_drafts.us_per_token() <= f.without.us_per_token();
  if (f.trying > 0) {
    --f.trying;
    return !drafting_faster;
  }
  if (++f.since_try >= kTryEvery) {
    f.since_try = 0;
    f.trying = kTrySteps;
  }
  return drafting_faster;
}

void DraftGovernor::OnStep(size_t generating, bool drafted, int64_t us, int64_t tokens) {
  if (generating == 0 || tokens <= 0 || us < 0) return;
  Side& side = drafted ? For(generating).with_drafts : For(generating).without;
  const double w = side.samples == 0 ? 1 : kWeight;
  side.us = (1 - w) * side.us + w * static_cast<double>(us);
  side.tokens = (1 - w) * side.tokens + w * static_cast<double>(tokens);
  ++side.samples;
}

double DraftGovernor::us_per_token(size_t generating, bool drafted) const {
  if (generating >= by_size_.size()) return 0;
  const ForBatchSize& f = by_size_[generating];
  return drafted ? f.with_drafts.us_per_token() : f.without.us_per_token();
}

}  // namespace llmd::sched
