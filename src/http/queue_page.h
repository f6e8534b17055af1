// GET /queue: the requests waiting for a slot, each with its position in the order they will
// get one and its expected wait (what Ollama users ask for, ollama #5253), by model. A peer
// sees its own requests; root sees every peer's, with their UIDs.
#ifndef LLMD_HTTP_QUEUE_PAGE_H_
#define LLMD_HTTP_QUEUE_PAGE_H_

#include <string>

#include "http/http_server.h"
#include "sched/server_state.h"

namespace llmd::http {

// Thread-safe. JSON: {"queued": [{"model", "position", "class", "waited_ms",
// "expected_wait_ms" (absent until the model measured a request), "uid" (root only)}]}.
std::string RenderQueuePage(sched::ServerState& ctx, const Peer& peer);

}  // namespace llmd::http

#endif  // LLMD_HTTP_QUEUE_PAGE_H_
