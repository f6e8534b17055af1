// ClientId: whom a request is for, as the per-client ledger and the token budgets count it:
// its peer's UID and its request class.
#ifndef LLMD_SCHED_CLIENT_ID_H_
#define LLMD_SCHED_CLIENT_ID_H_

#include <cstdint>
#include <optional>

#include "common/request_class.h"

namespace llmd::sched {

struct ClientId {
  std::optional<uint32_t> uid;  // none: a peer of no known UID (an unidentified TCP peer)
  RequestClass request_class = RequestClass::kNormal;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_CLIENT_ID_H_
