#include "sched/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace llmd::sched {

int64_t RateLimiter::Acquire(uint32_t uid) {
  const int64_t now = clock_.NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(uid, Bucket{rate_, now});
  Bucket& b = it->second;
  // Refill; the bucket never holds more than one second's worth, so it cannot overflow.
  b.tokens = std::min(rate_, b.tokens + (now - b.last_ms) * rate_ / 1000.0);
  b.last_ms = now;
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return 0;
  }
  return static_cast<int64_t>(std::ceil((1.0 - b.tokens) * 1000.0 / rate_));
}

}  // namespace llmd::sched
