// Daemon: wires the engine worker, the listener and the connection handlers together, and
// runs the lifecycle: load and warm up the model, listen, say READY, serve, reload on
// SIGHUP, stop on SIGTERM/SIGINT or a root Shutdown request.
//
// Thread-safety: Run() on the main thread, which must have SIGTERM, SIGINT and SIGHUP
// blocked (BlockSignals) before any thread starts.
#ifndef LLMD_DAEMON_DAEMON_H_
#define LLMD_DAEMON_DAEMON_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "config/config.h"
#include "daemon/http_frontend.h"
#include "sched/memory_guard.h"
#include "sched/server_context.h"
#include "transport/frame_connection.h"
#include "transport/peer_cred.h"
#include "transport/unix_listener.h"

namespace llmd::daemon {

// Blocks the signals Run() waits for, and ignores SIGPIPE. Call first thing in main().
void BlockSignals();

class Daemon {
 public:
  // `sources` are kept so SIGHUP can read the configuration again.
  Daemon(config::ParsedConfig parsed, config::ConfigSources sources);
  ~Daemon();

  // Serves until asked to stop. Returns the process exit code: 0 after a clean stop, 1 when
  // startup failed (the message is logged and sent to systemd as STATUS=).
  int Run();

 private:
  Status Start();
  void AcceptLoop();
  void Admit(int fd, const transport::PeerCred& peer);
  void ServeWaiting();
  void StartHandler(std::unique_ptr<transport::FrameConnection> conn, const transport::PeerCred& peer);
  void HandlerDone();
  void Reload();
  void Shutdown();

  config::ParsedConfig parsed_;
  config::ConfigSources sources_;
  sched::ServerContext ctx_;
  std::unique_ptr<transport::AccessPolicy> policy_;
  std::unique_ptr<sched::RateLimiter> rate_limiter_;
  std::unique_ptr<sched::MemoryGuard> memory_guard_;  // before workers_: outlives them
  std::vector<std::pair<std::string, std::unique_ptr<sched::EngineWorker>>> workers_;
  std::unique_ptr<transport::UnixListener> listener_;
  std::unique_ptr<HttpFrontend> http_;  // after workers_: destroyed (stopped) before them
  std::thread accept_thread_;
  std::thread reload_thread_;

  // Connection slots: at most max_connections handlers; others wait, bounded, in waiting_.
  struct Waiting {
    std::unique_ptr<transport::FrameConnection> conn;
    transport::PeerCred peer;
    int64_t deadline_ms;
  };
  std::mutex slots_mu_;
  std::condition_variable slots_cv_;
  size_t active_ = 0;              // guarded by slots_mu_
  std::deque<Waiting> waiting_;    // accept thread only (and Shutdown, after it joined)
  const int handler_done_fd_;      // eventfd: a handler finished, serve the waiting list
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_DAEMON_H_
