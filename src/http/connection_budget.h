// ConnectionBudget: who may hold the HTTP server's connections, so that no peer can lock the
// others out (docs/security.md, "How much").
//
// The server's `total` connections are two pools:
//  - the unidentified pool (`unidentified` slots): TCP connections that have not yet shown who
//    they are. Every TCP connection starts here, until its first request's headers are in, and
//    a peer with no known UID (not found in the kernel's socket table) stays here;
//  - the identified pool (the rest): Unix-socket peers from accept (SO_PEERCRED names them at
//    once) and TCP peers with a known UID once their headers are in.
// Within each pool, slots are shared fairly among holders (UIDs; all peers without one are one
// holder), by FairShares' rule. A slow-header flood therefore holds at most its share of the
// small unidentified pool, and never a slot of the identified one.
//
// Thread-safety: ConnectionBudget's methods are thread-safe; a Slot is released by whichever
// thread destroys it. FairShares alone is not thread-safe. Lifetime: the budget must outlive
// its slots.
#ifndef LLMD_HTTP_CONNECTION_BUDGET_H_
#define LLMD_HTTP_CONNECTION_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace llmd::http {

// `slots` shared among holders so that none can take them all, and a newcomer always gets one:
//  - a holder that holds none may take any free slot;
//  - a holder that holds some may take another only while more than reserve() slots are free
//    (they are kept for newcomers) and while it holds fewer than its share,
//    max(1, (slots - reserve()) / n) for the n holders now holding slots.
// reserve() = max(1, slots / 8). So a holder alone may hold slots - reserve(); two busy
// holders converge to half of that each as connections end, and so on. No slot is ever taken
// back: shares apply to new connections.
class FairShares {
 public:
  explicit FairShares(size_t slots);
  // Takes a slot for `holder`; false when the rule above refuses it.
  bool TryTake(uint64_t holder);
  // Gives back one of the slots `holder` holds.
  void Give(uint64_t holder);

  size_t slots() const { return slots_; }
  size_t reserve() const { return reserve_; }
  size_t used() const { return used_; }
  size_t held(uint64_t holder) const;
  size_t holders() const { return held_.size(); }

 private:
  const size_t slots_;
  const size_t reserve_;
  size_t used_ = 0;
  std::unordered_map<uint64_t, size_t> held_;  // holders holding at least one
};

class ConnectionBudget {
 public:
  // The holder of connections whose peer has no known UID (UIDs are 32-bit).
  static constexpr uint64_t kNoUid = uint64_t{1} << 32;
  enum class Pool { kUnidentified = 0, kIdentified = 1 };

  // One slot held; given back when destroyed. Move-only.
  class Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();
    Pool pool() const { return pool_; }
    uint64_t holder() const { return holder_; }

   private:
    friend class ConnectionBudget;
    Slot(ConnectionBudget* budget, Pool pool, uint64_t holder) : budget_(budget), pool_(pool), holder_(holder) {}
    ConnectionBudget* budget_;  // null once moved from
    Pool pool_;
    uint64_t holder_;
  };

  // `unidentified` of the `total` slots form the unidentified pool (0 without TCP listeners).
  ConnectionBudget(size_t total, size_t unidentified);

  std::optional<Slot> Take(Pool pool, uint64_t holder);
  // Moves an unidentified-pool `slot` of a UID holder into that UID's share of the identified
  // pool; false, and the slot stays where it was, when that share refuses it. True at once for
  // a slot already there.
  bool Promote(Slot& slot);
  // Another slot in the same pool for the same holder (a request's extra threads).
  std::optional<Slot> TakeAnother(const Slot& like) { return Take(like.pool(), like.holder()); }

  size_t used(Pool pool) const;
  size_t held(Pool pool, uint64_t holder) const;

 private:
  void Give(Pool pool, uint64_t holder);
  FairShares& pool(Pool p) { return pools_[static_cast<int>(p)]; }

  mutable std::mutex mu_;
  FairShares pools_[2];  // guarded by mu_; indexed by Pool
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_CONNECTION_BUDGET_H_
