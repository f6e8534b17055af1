// Daemon: wires the engine worker, the listener and the connection handlers together, and
// runs the lifecycle: load and warm up the model, listen, say READY, serve, reload on
// SIGHUP, stop on SIGTERM/SIGINT or a root Shutdown request.
//
// Thread-safety: Run() on the main thread, which must have SIGTERM, SIGINT and SIGHUP
// blocked (BlockSignals) before any thread starts.
#ifndef LLMD_DAEMON_DAEMON_H_
#define LLMD_DAEMON_DAEMON_H_

#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/handler_threads.h"
#include "config/config.h"
#include "daemon/http_frontend.h"
#include "daemon/model_manager.h"
#include "daemon/model_registry.h"
#include "daemon/server_context.h"
#include "engine/types.h"
#include "format/gguf_precheck.h"
#include "models/catalog.h"
#include "models/dir_watcher.h"
#include "sched/device_conditions.h"
#include "sched/memory_guard.h"
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
  Status LoadModels(const std::vector<std::pair<std::string, std::string>>& models, uint64_t budget_mib);
  // The worker options every model shares.
  sched::WorkerOptions BaseWorkerOptions() const;
  // Loads one model (pre-check, engine, warm-up, worker) with the current settings, and what
  // the budget counts for it: startup and the registry's loader thread.
  Result<LoadedModel> LoadModel(const ModelSource& source);
  // What a model should take once loaded, from its file (the registry's estimate).
  uint64_t EstimateModel(const ModelSource& source) const;
  // The engine settings `source` loads with, its context resolved from its file's summary as
  // the engine resolves it: what EstimateModel sizes, and the context a listing reports.
  engine::EngineConfig SizedEngine(const ModelSource& source, const format::GgufSummary& gguf) const;
  // Models on demand: scans the models directories into the registry (startup and the
  // watcher's thread), and publishes the settings with the found embedding models.
  void Rescan();
  Status WatchModelDirectories();
  void PublishConfig(const config::DaemonConfig& base);
  void AcceptLoop();
  void Admit(int fd, const transport::PeerCred& peer);
  void ServeWaiting();
  bool StartHandler(std::unique_ptr<transport::FrameConnection>& conn, const transport::PeerCred& peer);
  void Reload();
  void Shutdown();

  config::ParsedConfig parsed_;
  config::ConfigSources sources_;
  std::unique_ptr<transport::AccessPolicy> policy_;
  std::unique_ptr<sched::RateLimiter> rate_limiter_;
  std::unique_ptr<ServerContext> ctx_;                // uses rate_limiter_
  std::unique_ptr<sched::MemoryGuard> memory_guard_;  // before workers_: outlives them
  std::unique_ptr<sched::DeviceConditionsMonitor> device_monitor_;  // likewise
  // The models, loaded or not; owns the workers. Set before HTTP starts, freed last.
  std::unique_ptr<ModelRegistry> registry_;
  std::unique_ptr<models::Catalog> catalog_;       // models on demand; null when off
  std::unique_ptr<models::DirWatcher> watcher_;    // likewise; stopped before the registry
  std::unique_ptr<ModelManager> manager_;          // pull, create, copy, delete; null without models_dir
  std::mutex rescan_mu_;                           // one Rescan at a time: the last scan is the one published
  std::map<std::string, std::string> unusable_;    // the last scan's unusable models and why (rescan_mu_)
  std::mutex config_mu_;                           // the two below: watcher and reload threads
  config::DaemonConfig base_config_;               // the settings as read (before found models)
  std::vector<std::string> found_embedding_;       // embedding models found on disk
  std::map<std::string, config::ModelGenerationDefaults> found_defaults_;  // manifests' PARAMETERs, by model
  uint64_t kv_share_bytes_ = 0;  // each model's automatic KV pool may take this much (Start)
  std::unique_ptr<transport::UnixListener> listener_;
  std::unique_ptr<HttpFrontend> http_;  // after workers_: destroyed (stopped) before them
  std::thread accept_thread_;
  std::thread reload_thread_;

  // Native connections: at most max_connections handlers per request class (the class the
  // config gives the peer), so background connections never keep an interactive one waiting
  // (owned, joined at shutdown); others wait, bounded, in waiting_.
  struct Waiting {
    std::unique_ptr<transport::FrameConnection> conn;
    transport::PeerCred peer;
    int64_t deadline_ms;
  };
  RequestClass ConnectionClass(const transport::PeerCred& peer) const;
  HandlerThreads handlers_;
  // Handlers running, per class; each handler gives its own back as it ends.
  std::array<std::atomic<uint32_t>, kRequestClasses> class_handlers_{};
  std::deque<Waiting> waiting_;    // accept thread only (and Shutdown, after it joined)
  // Set by the accept loop when it stopped accepting because llmd was idle for
  // idle_exit_after under socket activation: connections that come later wait in systemd's
  // socket for the next start.
  std::atomic<bool> idle_exit_{false};
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_DAEMON_H_
