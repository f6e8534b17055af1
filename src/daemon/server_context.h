// ServerContext: the daemon's shared serving state, as every front end sees it (ServerState):
// the settings, the loaded models, readiness and shutdown flags, the rate limiter and the
// request counters. Built and owned by the Daemon.
//
// Thread-safety: every method is thread-safe. The models are the ModelRegistry's (loaded and
// unloaded while serving); the settings are replaced whole on reload and when the models
// directories change.
#ifndef LLMD_DAEMON_SERVER_CONTEXT_H_
#define LLMD_DAEMON_SERVER_CONTEXT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/model_registry.h"
#include "sched/model_admin.h"
#include "sched/server_state.h"

namespace llmd::daemon {

class ServerContext final : public sched::ServerState {
 public:
  ServerContext(std::shared_ptr<const config::DaemonConfig> config, sched::RateLimiter& rate_limiter)
      : config_(std::move(config)), rate_limiter_(rate_limiter) {}

  std::shared_ptr<const config::DaemonConfig> config() const override {
    std::lock_guard<std::mutex> lock(config_mu_);
    return config_;
  }
  void set_config(std::shared_ptr<const config::DaemonConfig> config) {
    std::lock_guard<std::mutex> lock(config_mu_);
    config_ = std::move(config);
  }

  sched::ModelList models() const override { return registry_ != nullptr ? registry_->Loaded() : sched::ModelList(); }
  std::vector<sched::AvailableModel> available() const override {
    return registry_ != nullptr ? registry_->Available() : std::vector<sched::AvailableModel>();
  }
  sched::ModelLoadStats model_load_stats() const override {
    return registry_ != nullptr ? registry_->load_stats() : sched::ModelLoadStats();
  }
  Result<sched::WorkerRef> Acquire(const std::optional<std::string>& name, int64_t wait_ms,
                                   std::optional<int64_t> keep_alive_ms) override {
    if (registry_ == nullptr) return sched::ServerState::Acquire(name, wait_ms, keep_alive_ms);
    return registry_->Acquire(name, wait_ms, keep_alive_ms);
  }
  sched::ModelAdmin* model_admin() override { return model_admin_.load(); }
  // Once the models directories are watched; `admin` outlives this context's users.
  void set_model_admin(sched::ModelAdmin* admin) { model_admin_ = admin; }
  // Startup, before any front end starts; `registry` outlives this context's users.
  void set_registry(ModelRegistry* registry) { registry_ = registry; }

  bool ready() const override { return ready_.load(); }
  void set_ready() { ready_ = true; }
  bool stopping() const override { return stopping_.load(); }
  void set_stopping() { stopping_ = true; }
  // The flag connection reads poll, so they end when shutdown begins.
  const std::atomic<bool>* stopping_flag() const { return &stopping_; }
  void RequestShutdown() override { shutdown_requested_ = true; }
  bool shutdown_requested() const { return shutdown_requested_.load(); }

  sched::RateLimiter& rate_limiter() override { return rate_limiter_; }
  sched::RequestCounters& requests() override { return requests_; }

 private:
  mutable std::mutex config_mu_;
  std::shared_ptr<const config::DaemonConfig> config_;  // guarded by config_mu_
  ModelRegistry* registry_ = nullptr;  // set before any front end starts
  std::atomic<sched::ModelAdmin*> model_admin_{nullptr};  // set once the models directories are watched
  sched::RateLimiter& rate_limiter_;
  sched::RequestCounters requests_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shutdown_requested_{false};
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_SERVER_CONTEXT_H_
