// The per-client ledger's rows as the native Stats reply carries them (proto::ClientStats):
// sums become means, counters are clamped to u32.
#ifndef LLMD_DAEMON_CLIENT_ROWS_H_
#define LLMD_DAEMON_CLIENT_ROWS_H_

#include <vector>

#include "proto/messages.h"
#include "sched/client_ledger.h"

namespace llmd::daemon {

std::vector<proto::ClientStats> ClientRows(const std::vector<sched::ClientRow>& rows);

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_CLIENT_ROWS_H_
