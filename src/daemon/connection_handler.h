// Serves one accepted, authorized connection until the peer closes, a deadline passes, the
// stream goes out of sync, or the daemon stops. Runs on its own thread.
#ifndef LLMD_DAEMON_CONNECTION_HANDLER_H_
#define LLMD_DAEMON_CONNECTION_HANDLER_H_

#include <memory>
#include <string>

#include "daemon/server_context.h"
#include "proto/messages.h"
#include "transport/frame_connection.h"
#include "transport/peer_cred.h"

namespace llmd::daemon {

void ServeConnection(transport::FrameConnection& conn, const transport::PeerCred& peer, ServerContext& ctx);

// For a connection waiting for a slot: answers a HealthCheck or Shutdown at once from cached
// state (so health probes and an administrator are never locked out by busy clients).
// Returns true when the connection is finished with (answered, closed or broken); false
// when it should keep waiting (nothing complete yet, or a request that needs a slot, which
// is put back for its handler).
bool TriageWaiting(transport::FrameConnection& conn, const transport::PeerCred& peer, ServerContext& ctx);

// Answers a connection that waited too long for a slot: Busy (or InternalError for a seed
// request) if its first frame is already here, else nothing; the caller then closes it.
void RefuseBusy(transport::FrameConnection& conn, const std::string& why);

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_CONNECTION_HANDLER_H_
