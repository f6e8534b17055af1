// TokenBudgets: the optional per-UID token budgets of each request class (config
// class_token_budgets, tokens a minute). One token bucket per (peer UID, class): it holds at
// most a minute's tokens and refills at the configured rate. A finished request is charged
// what it cost (its uncached prompt plus generated tokens), which may take the bucket below
// zero: a request is allowed while the bucket holds a token, so one large answer is paid for
// by the waits after it rather than refused before anyone knows its size. A request arriving
// at an empty bucket is refused before it is queued, told when the bucket will hold a token.
//
// Peers whose UID is not known (unidentified TCP peers) share one bucket per class. Time comes
// from the caller (the dispatcher's clock), so tests drive it with a ManualClock.
//
// Thread-safety: every method is thread-safe.
#ifndef LLMD_SCHED_TOKEN_BUDGET_H_
#define LLMD_SCHED_TOKEN_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "common/request_class.h"
#include "llmd/status.h"
#include "sched/client_id.h"

namespace llmd::sched {

class TokenBudgets {
 public:
  // Past this many buckets, those that have refilled (as good as new) are dropped.
  static constexpr size_t kPruneAbove = 256;

  // 0 when a request of `client` may run now (its bucket holds a token, or `per_minute` is 0:
  // no budget); else the milliseconds until its bucket holds one.
  int64_t RetryAfterMs(const ClientId& client, uint32_t per_minute, int64_t now_ms);

  // Takes `tokens` from the client's bucket (nothing without a budget).
  void Charge(const ClientId& client, uint64_t tokens, uint32_t per_minute, int64_t now_ms);

  size_t size() const;  // buckets held

 private:
  struct Bucket {
    double tokens = 0;  // below zero: owed by what finished requests cost
    int64_t last_ms = 0;
    uint32_t per_minute = 0;  // the rate it last refilled at (the config may change on reload)
  };
  // The unknown UID is a key of its own, past every real UID.
  using Key = std::pair<uint64_t, RequestClass>;
  static Key KeyOf(const ClientId& client);
  // The bucket of `key`, refilled up to `now_ms` (a new one is full). Needs mu_.
  Bucket& Refilled(const Key& key, uint32_t per_minute, int64_t now_ms);
  void PruneFull(int64_t now_ms);  // needs mu_

  mutable std::mutex mu_;
  std::map<Key, Bucket> buckets_;  // guarded by mu_
};

// The refusal of a request whose bucket is empty: ResourceExhausted, kBudgetExhausted, with
// its retry-after in the message ("retry after N s", whole seconds rounded up) and attached
// (Status::retry_after_ms), so each front end can say it in its own way.
Status BudgetExhaustedError(const ClientId& client, uint32_t per_minute, int64_t retry_after_ms);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_TOKEN_BUDGET_H_
