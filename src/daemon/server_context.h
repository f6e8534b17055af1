// ServerContext: the daemon's shared serving state, as every front end sees it (ServerState):
// the settings, the loaded models, readiness and shutdown flags, the rate limiter and the
// request counters. Built and owned by the Daemon.
//
// Thread-safety: every method is thread-safe. The model list is fixed before ready() turns
// true; the settings are replaced whole on reload.
#ifndef LLMD_DAEMON_SERVER_CONTEXT_H_
#define LLMD_DAEMON_SERVER_CONTEXT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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

  const std::vector<std::pair<std::string, sched::EngineWorker*>>& models() const override { return models_; }
  // Startup only, before set_ready().
  void AddModel(std::string name, sched::EngineWorker* worker) { models_.emplace_back(std::move(name), worker); }

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
  std::vector<std::pair<std::string, sched::EngineWorker*>> models_;
  sched::RateLimiter& rate_limiter_;
  sched::RequestCounters requests_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shutdown_requested_{false};
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_SERVER_CONTEXT_H_
