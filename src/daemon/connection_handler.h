// Serves one accepted, authorized connection until the peer closes, a deadline passes, the
// stream goes out of sync, or the daemon stops. Runs on its own thread.
#ifndef LLMD_DAEMON_CONNECTION_HANDLER_H_
#define LLMD_DAEMON_CONNECTION_HANDLER_H_

#include <string>

#include "daemon/server_context.h"
#include "proto/messages.h"
#include "transport/peer_cred.h"

namespace llmd::daemon {

// Takes ownership of `fd`.
void ServeConnection(int fd, const transport::PeerCred& peer, ServerContext& ctx);

// Maps an engine/scheduler Status to the wire error code. Seed-era requests get only the six
// original codes (Busy and RateLimited become InternalError, ShuttingDown GenerationFailed).
proto::ErrorCode WireCode(const Status& s, bool seed_request);

// Answers a connection that waited too long for a slot: Busy (or InternalError for a seed
// request) if its first frame is already here, else just closes it. Takes ownership of `fd`.
void RefuseBusy(int fd, const std::string& why);

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_CONNECTION_HANDLER_H_
