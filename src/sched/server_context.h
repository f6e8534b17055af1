// ServerContext: what every connection handler shares. Built and owned by the daemon; the native and HTTP front ends read it.
#ifndef LLMD_SCHED_SERVER_CONTEXT_H_
#define LLMD_SCHED_SERVER_CONTEXT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "sched/engine_worker.h"
#include "sched/metrics.h"
#include "sched/rate_limiter.h"

namespace llmd::sched {

struct ServerContext {
  // The settings requests use (sampling defaults, limits). Replaced whole on reload.
  std::shared_ptr<const config::DaemonConfig> config() const {
    std::lock_guard<std::mutex> lock(config_mu);
    return current_config;
  }
  void set_config(std::shared_ptr<const config::DaemonConfig> c) {
    std::lock_guard<std::mutex> lock(config_mu);
    current_config = std::move(c);
  }

  // The loaded models by name, the first being the default. Fixed after startup.
  std::vector<std::pair<std::string, EngineWorker*>> workers;
  EngineWorker* worker = nullptr;  // the default (first) model's

  // The worker for a request's `model`, or nullptr when no model has that name.
  EngineWorker* WorkerFor(const std::optional<std::string>& name) const {
    if (!name) return worker;
    for (const auto& [n, w] : workers) {
      if (n == *name) return w;
    }
    return nullptr;
  }
  std::string ModelNames() const {
    std::string all;
    for (const auto& [n, w] : workers) all += (all.empty() ? "" : ", ") + n;
    return all;
  }
  RateLimiter* rate_limiter = nullptr;
  RequestCounters requests;               // finished requests by API and outcome
  std::atomic<bool> ready{false};         // the models are loaded and warm
  std::atomic<bool> stopping{false};
  std::atomic<bool> shutdown_requested{false};  // a root peer sent Shutdown

  mutable std::mutex config_mu;
  std::shared_ptr<const config::DaemonConfig> current_config;  // guarded by config_mu
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_SERVER_CONTEXT_H_
