// ClientLedger: what each client got from the daemon, per peer UID and request class: its
// requests and refusals, the time its requests waited for a slot and for their first token,
// its tokens and how often its requests were paused for a higher class. The RequestDispatcher
// feeds it (every generation passes there); /metrics and the native Stats reply show it.
//
// The label set is bounded: the first kMaxNamedUids UIDs seen are kept by number, every later
// one is counted under "other", and peers of no known UID under "unknown". So at most
// (kMaxNamedUids + 2) x 3 rows exist, whatever the peers do.
//
// Thread-safety: every method is thread-safe.
#ifndef LLMD_SCHED_CLIENT_LEDGER_H_
#define LLMD_SCHED_CLIENT_LEDGER_H_

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/request_class.h"
#include "engine/types.h"
#include "sched/client_id.h"

namespace llmd::sched {

// Why a request was refused before it ran.
enum class Refusal : uint8_t {
  kBudget = 0,     // its UID's token budget for the class was spent (class_token_budgets)
  kQueueFull = 1,  // its class's queue was full (queue_depth)
  kBusy = 2,       // any other lack of room (the memory floor)
  kDeadline = 3,   // its first-token deadline could not be met
};
inline constexpr int kRefusalKinds = 4;
// "budget", "queue_full", "busy", "deadline".
const char* RefusalName(Refusal r);

struct ClientCounters {
  uint64_t requests = 0;  // every request that reached a model, refused ones included
  std::array<uint64_t, kRefusalKinds> refusals{};
  double queue_wait_ms_sum = 0;  // over the requests that ran and were not cancelled
  uint64_t queue_waits = 0;
  double ttft_ms_sum = 0;  // over the requests that generated a token
  uint64_t ttfts = 0;
  uint64_t prompt_tokens = 0;  // cached ones included
  uint64_t cached_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t preemptions = 0;

  uint64_t refused() const;
};

struct ClientRow {
  std::string uid;  // "1000", "other" or "unknown"
  RequestClass request_class = RequestClass::kNormal;
  ClientCounters counters;
};

class ClientLedger {
 public:
  static constexpr size_t kMaxNamedUids = 16;

  void CountRequest(const ClientId& client);
  void CountRefusal(const ClientId& client, Refusal why);
  // A request that ran: its tokens and preemptions, and, unless it was cancelled, its queue
  // wait and (when it generated a token) its time to first token.
  void CountRun(const ClientId& client, const engine::GenerationStats& stats);

  // Every row, by UID (numbers in order, then "other", then "unknown"), then class.
  std::vector<ClientRow> Snapshot() const;

 private:
  // A UID's row key: the UID, or one of the two catch-alls past every real UID.
  static constexpr uint64_t kOther = uint64_t{1} << 32;
  static constexpr uint64_t kUnknown = kOther + 1;
  using Key = std::pair<uint64_t, RequestClass>;
  Key KeyOf(const ClientId& client);  // needs mu_

  mutable std::mutex mu_;
  std::set<uint32_t> named_;                // guarded by mu_; at most kMaxNamedUids
  std::map<Key, ClientCounters> counters_;  // guarded by mu_
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_CLIENT_LEDGER_H_
