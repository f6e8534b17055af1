#include "http/queue_page.h"

#include "http/json_reply.h"

namespace llmd::http {

std::string RenderQueuePage(sched::ServerState& ctx, const Peer& peer) {
  const bool sees_all = peer.identified && peer.uid == 0;
  nlohmann::json queued = nlohmann::json::array();
  for (const auto& [model, worker] : ctx.models()) {
    for (const sched::EngineWorker::QueuedJob& job : worker->Queued()) {
      const bool own = peer.identified && job.peer_uid == peer.uid;
      if (!sees_all && !own) continue;
      nlohmann::json row = {{"model", model},
                            {"position", job.position},
                            {"class", RequestClassName(job.request_class)},
                            {"waited_ms", job.waited_ms}};
      if (job.estimate.known) row["expected_wait_ms"] = job.estimate.first_token_ms();
      if (sees_all && job.peer_uid) row["uid"] = *job.peer_uid;
      queued.push_back(std::move(row));
    }
  }
  return Dump({{"queued", std::move(queued)}});
}

}  // namespace llmd::http
