#include "http/connection_budget.h"

#include <algorithm>

namespace llmd::http {

FairShares::FairShares(size_t slots) : slots_(slots), reserve_(std::max<size_t>(1, slots / 8)) {}

size_t FairShares::held(uint64_t holder) const {
  auto it = held_.find(holder);
  return it == held_.end() ? 0 : it->second;
}

bool FairShares::TryTake(uint64_t holder) {
  if (used_ >= slots_) return false;
  const size_t mine = held(holder);
  if (mine > 0) {
    // The reserve stays free for holders that hold nothing yet.
    if (used_ + reserve_ >= slots_) return false;
    const size_t share = std::max<size_t>(1, (slots_ - reserve_) / held_.size());
    if (mine >= share) return false;
  }
  ++held_[holder];
  ++used_;
  return true;
}

void FairShares::Give(uint64_t holder) {
  auto it = held_.find(holder);
  if (it == held_.end()) return;
  if (--it->second == 0) held_.erase(it);
  --used_;
}

ConnectionBudget::Slot::Slot(Slot&& other) noexcept
    : budget_(other.budget_), pool_(other.pool_), holder_(other.holder_) {
  other.budget_ = nullptr;
}

ConnectionBudget::Slot::~Slot() {
  if (budget_ != nullptr) budget_->Give(pool_, holder_);
}

ConnectionBudget::ConnectionBudget(size_t total, size_t unidentified)
    : pools_{FairShares(std::min(unidentified, total)), FairShares(total - std::min(unidentified, total))} {}

std::optional<ConnectionBudget::Slot> ConnectionBudget::Take(Pool p, uint64_t holder) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pool(p).TryTake(holder)) return std::nullopt;
  return Slot(this, p, holder);
}

bool ConnectionBudget::Promote(Slot& slot) {
  if (slot.pool_ == Pool::kIdentified) return true;
  if (slot.holder_ == kNoUid) return false;  // no UID: nothing to be fair to
  std::lock_guard<std::mutex> lock(mu_);
  if (!pool(Pool::kIdentified).TryTake(slot.holder_)) return false;
  pool(Pool::kUnidentified).Give(slot.holder_);
  slot.pool_ = Pool::kIdentified;
  return true;
}

void ConnectionBudget::Give(Pool p, uint64_t holder) {
  std::lock_guard<std::mutex> lock(mu_);
  pool(p).Give(holder);
}

size_t ConnectionBudget::used(Pool p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_[static_cast<int>(p)].used();
}

size_t ConnectionBudget::held(Pool p, uint64_t holder) const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_[static_cast<int>(p)].held(holder);
}

}  // namespace llmd::http
