#include "sched/token_budget.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace llmd::sched {
namespace {

constexpr double kMsPerMinute = 60000.0;

// The level a bucket at `tokens` since `last_ms` reaches by `now_ms`, never above a minute's worth.
double RefilledLevel(double tokens, int64_t last_ms, uint32_t per_minute, int64_t now_ms) {
  const double elapsed = static_cast<double>(std::max<int64_t>(0, now_ms - last_ms));
  return std::min<double>(per_minute, tokens + elapsed * per_minute / kMsPerMinute);
}

}  // namespace

TokenBudgets::Key TokenBudgets::KeyOf(const ClientId& client) {
  return {client.uid ? *client.uid : (uint64_t{1} << 32), client.request_class};
}

TokenBudgets::Bucket& TokenBudgets::Refilled(const Key& key, uint32_t per_minute, int64_t now_ms) {
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{static_cast<double>(per_minute), now_ms, per_minute});
  Bucket& b = it->second;
  if (!fresh) b.tokens = RefilledLevel(b.tokens, b.last_ms, per_minute, now_ms);
  b.last_ms = now_ms;
  b.per_minute = per_minute;
  return b;
}

void TokenBudgets::PruneFull(int64_t now_ms) {
  if (buckets_.size() <= kPruneAbove) return;
  std::erase_if(buckets_, [&](const auto& entry) {
    const Bucket& b = entry.second;
    return RefilledLevel(b.tokens, b.last_ms, b.per_minute, now_ms) >= b.per_minute;
  });
}

int64_t TokenBudgets::RetryAfterMs(const ClientId& client, uint32_t per_minute, int64_t now_ms) {
  if (per_minute == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  PruneFull(now_ms);
  const Bucket& b = Refilled(KeyOf(client), per_minute, now_ms);
  if (b.tokens >= 1.0) return 0;
  // At least 1 ms: a refusal always says to wait.
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil((1.0 - b.tokens) * kMsPerMinute / per_minute)));
}

void TokenBudgets::Charge(const ClientId& client, uint64_t tokens, uint32_t per_minute, int64_t now_ms) {
  if (per_minute == 0 || tokens == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  PruneFull(now_ms);
  Refilled(KeyOf(client), per_minute, now_ms).tokens -= static_cast<double>(tokens);
}

size_t TokenBudgets::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

Status BudgetExhaustedError(const ClientId& client, uint32_t per_minute, int64_t retry_after_ms) {
  const std::string who = client.uid ? "uid " + std::to_string(*client.uid) : "peers of no known uid";
  const int64_t seconds = (retry_after_ms + 999) / 1000;
  return ResourceExhaustedError("the " + std::string(RequestClassName(client.request_class)) + " token budget of " + who +
                                " (" + std::to_string(per_minute) + " tokens a minute) is spent; retry after " +
                                std::to_string(seconds) + " s")
      .WithReason(ErrorReason::kBudgetExhausted)
      .WithRetryAfter(retry_after_ms);
}

}  // namespace llmd::sched
