// ServerState: what every front end (native socket, HTTP APIs) may ask of the running daemon:
// its settings, its models, whether it is ready or stopping, the rate limiter and the request
// counters. The daemon implements it (daemon::ServerContext); front ends see only this. The
// per-client ledger and the token budgets are kept here, by every implementation alike: the
// RequestDispatcher, which every generation passes, feeds and consults them.
//
// Thread-safety: every method is thread-safe. Lifetime: the workers returned live as long as
// the daemon serves.
#ifndef LLMD_SCHED_SERVER_STATE_H_
#define LLMD_SCHED_SERVER_STATE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "sched/client_ledger.h"
#include "sched/engine_worker.h"
#include "sched/metrics.h"
#include "sched/rate_limiter.h"
#include "sched/token_budget.h"

namespace llmd::sched {

class ServerState {
 public:
  virtual ~ServerState() = default;

  // The settings requests use (sampling defaults, limits); replaced whole on reload.
  virtual std::shared_ptr<const config::DaemonConfig> config() const = 0;
  // The loaded models by name, the first being the default. Fixed once ready.
  virtual const std::vector<std::pair<std::string, EngineWorker*>>& models() const = 0;
  // The worker for a request's `model` (none: the default), or nullptr when no model has
  // that name.
  EngineWorker* WorkerFor(const std::optional<std::string>& name) const;
  // "a, b": the loaded models' names, for messages.
  std::string ModelNames() const;

  virtual bool ready() const = 0;     // the models are loaded and warm
  virtual bool stopping() const = 0;  // shutdown has begun
  // Asks the daemon to stop (a root peer's Shutdown request).
  virtual void RequestShutdown() = 0;
  virtual RateLimiter& rate_limiter() = 0;
  virtual RequestCounters& requests() = 0;  // finished requests by API and outcome

  // Per (peer UID, class): requests, refusals, waits, tokens (/metrics, the native Stats reply).
  ClientLedger& clients() { return clients_; }
  const ClientLedger& clients() const { return clients_; }
  // The class_token_budgets buckets, per (peer UID, class).
  TokenBudgets& token_budgets() { return token_budgets_; }

 private:
  ClientLedger clients_;
  TokenBudgets token_budgets_;
};

inline EngineWorker* ServerState::WorkerFor(const std::optional<std::string>& name) const {
  const auto& all = models();
  if (all.empty()) return nullptr;
  if (!name) return all.front().second;
  for (const auto& [n, w] : all) {
    if (n == *name) return w;
  }
  return nullptr;
}

inline std::string ServerState::ModelNames() const {
  std::string names;
  for (const auto& [n, w] : models()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

}  // namespace llmd::sched

#endif  // LLMD_SCHED_SERVER_STATE_H_
