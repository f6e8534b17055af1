// The native protocol's one mapping from a Status (code and reason) to its wire error code.
// Seed-era requests get only the reference daemon's six codes; appended requests get the
// finer ones. No message text is ever inspected.
#ifndef LLMD_DAEMON_NATIVE_ERRORS_H_
#define LLMD_DAEMON_NATIVE_ERRORS_H_

#include "llmd/status.h"
#include "proto/messages.h"

namespace llmd::daemon {

proto::ErrorCode WireCode(const Status& status, bool seed_request);

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_NATIVE_ERRORS_H_
