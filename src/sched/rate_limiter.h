// RateLimiter: a token bucket per peer UID, so opening a new connection does not reset a
// peer's budget. Thread-safe.
#ifndef LLMD_SCHED_RATE_LIMITER_H_
#define LLMD_SCHED_RATE_LIMITER_H_

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "common/clock.h"

namespace llmd::sched {

class RateLimiter {
 public:
  // `per_second` requests per second, with a burst of the same size. `clock` must outlive this.
  RateLimiter(uint32_t per_second, const Clock& clock) : rate_(per_second), clock_(clock) {}

  // Takes one token from `uid`'s bucket. Returns 0 when allowed, else the milliseconds until
  // a token will be available.
  int64_t Acquire(uint32_t uid);

 private:
  struct Bucket {
    double tokens;
    int64_t last_ms;
  };
  const double rate_;
  const Clock& clock_;
  std::mutex mu_;
  std::unordered_map<uint32_t, Bucket> buckets_;  // one per allowed UID: a handful
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_RATE_LIMITER_H_
