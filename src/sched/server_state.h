// ServerState: what every front end (native socket, HTTP APIs) may ask of the running daemon:
// its settings, its models, whether it is ready or stopping, the rate limiter and the request
// counters. The daemon implements it (daemon::ServerContext); front ends see only this. The
// per-client ledger and the token budgets are kept here, by every implementation alike: the
// RequestDispatcher, which every generation passes, feeds and consults them.
//
// Models load and unload while the daemon serves (models on demand): every worker is handed
// out as a shared pointer, so none is destroyed while a handler, a listing or /metrics holds
// it. A model unloaded meanwhile has its worker stopped (a job submitted to it fails as
// shutting down); a request holds its model with Acquire, which keeps it from being unloaded.
//
// Thread-safety: every method is thread-safe.
#ifndef LLMD_SCHED_SERVER_STATE_H_
#define LLMD_SCHED_SERVER_STATE_H_

#include <cstdint>
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

class ModelAdmin;  // model_admin.h

// A loaded model's worker. While a copy is held the worker is not destroyed (it may be
// stopped: its model was unloaded). One from ServerState::Acquire is also a lease: the model
// stays loaded until every lease on it is dropped.
using WorkerRef = std::shared_ptr<EngineWorker>;
// The loaded models by name, the first being the default.
using ModelList = std::vector<std::pair<std::string, WorkerRef>>;

// A model the daemon can serve, loaded or not (the listings: /v1/models, /api/tags, /api/ps).
struct AvailableModel {
  std::string name;
  std::string path;       // its weights file; "" when unknown
  bool loaded = false;
  bool loading = false;
  bool embedding = false;  // serves embeddings, not generation
  bool pinned = false;     // never unloaded (the default model, the guard)
  // Loaded and idle: milliseconds until it is unloaded; -1: not while idle (no keep_alive runs
  // out, or requests hold it).
  int64_t expires_in_ms = -1;
  uint64_t memory_bytes = 0;  // loaded: what the memory budget counts for it
  // What one request may hold once it is loaded (the config's max_context_len, else the
  // automatic context sized from its file); 0: not known before it loads.
  int32_t context_tokens = 0;
};

// Why a model was unloaded (the registry's reasons, /metrics' labels).
enum class ModelUnload { kKeepAlive, kMemoryBudget, kRemoved };
inline constexpr int kModelUnloadKinds = 3;
inline const char* ModelUnloadName(ModelUnload why) {
  switch (why) {
    case ModelUnload::kKeepAlive: return "keep_alive";
    case ModelUnload::kMemoryBudget: return "memory_budget";
    case ModelUnload::kRemoved: return "removed";
  }
  return "?";
}

// Models loaded and unloaded against the memory budget, since the daemon started (/metrics).
struct ModelLoadStats {
  uint64_t budget_bytes = 0;  // the memory budget; 0: none
  uint64_t used_bytes = 0;    // what the loaded models (and one loading, by its estimate) count
  uint64_t loads = 0;         // models loaded: the config's at startup, then on demand
  uint64_t load_failures = 0; // loads that failed (the file, the engine, the warm-up)
  uint64_t load_refusals = 0; // loads refused: no room in the budget, even after evicting
  uint64_t unloads[kModelUnloadKinds] = {};  // by ModelUnload
};

class ServerState {
 public:
  virtual ~ServerState() = default;

  // The settings requests use (sampling defaults, limits); replaced whole on reload.
  virtual std::shared_ptr<const config::DaemonConfig> config() const = 0;
  // The loaded models now, the first being the default: a snapshot, safe to keep while
  // models load and unload.
  virtual ModelList models() const = 0;
  // Every model that can be served, loaded or not, the default first. By default: the loaded
  // ones.
  virtual std::vector<AvailableModel> available() const;
  // The memory budget and the loads and unloads so far. By default: nothing (a fixed set of
  // models, no budget).
  virtual ModelLoadStats model_load_stats() const { return {}; }
  // The worker of a loaded model `name` (none: the default), or nullptr when no model of that
  // name is loaded. Loads nothing and holds no lease.
  WorkerRef WorkerFor(const std::optional<std::string>& name) const;
  // The worker for a request's `model` (none: the default), held for the request: the model is
  // not unloaded while the returned lease lives. A model that can be served but is not loaded
  // is loaded first (off the caller's thread; the caller waits up to `wait_ms`, 0: until the
  // load ends). `keep_alive_ms` (Ollama's keep_alive): how long the model stays loaded once
  // idle after this request (0: unloaded at once, < 0: kept); none: its default.
  // Errors: NotFound (kUnknownModel); ResourceExhausted while it is still loading at
  // `wait_ms`, or when it does not fit the memory budget; the load's own error.
  // By default: WorkerFor, loading nothing.
  virtual Result<WorkerRef> Acquire(const std::optional<std::string>& name, int64_t wait_ms,
                                    std::optional<int64_t> keep_alive_ms);
  // "a, b": the names of the models that can be served, for messages.
  std::string ModelNames() const;

  virtual bool ready() const = 0;     // the models are loaded and warm
  virtual bool stopping() const = 0;  // shutdown has begun
  // Asks the daemon to stop (a root peer's Shutdown request).
  virtual void RequestShutdown() = 0;
  virtual RateLimiter& rate_limiter() = 0;
  virtual RequestCounters& requests() = 0;  // finished requests by API and outcome
  // Model management (pull, create, copy, delete); null when the daemon has no models_dir.
  virtual ModelAdmin* model_admin() { return nullptr; }

  // Per (peer UID, class): requests, refusals, waits, tokens (/metrics, the native Stats reply).
  ClientLedger& clients() { return clients_; }
  const ClientLedger& clients() const { return clients_; }
  // The class_token_budgets buckets, per (peer UID, class).
  TokenBudgets& token_budgets() { return token_budgets_; }

 private:
  ClientLedger clients_;
  TokenBudgets token_budgets_;
};

inline std::vector<AvailableModel> ServerState::available() const {
  std::vector<AvailableModel> out;
  for (const auto& [n, w] : models()) {
    AvailableModel m;
    m.name = n;
    m.loaded = true;
    out.push_back(std::move(m));
  }
  return out;
}

inline WorkerRef ServerState::WorkerFor(const std::optional<std::string>& name) const {
  const ModelList all = models();
  if (all.empty()) return nullptr;
  if (!name) return all.front().second;
  for (const auto& [n, w] : all) {
    if (n == *name) return w;
  }
  return nullptr;
}

inline Result<WorkerRef> ServerState::Acquire(const std::optional<std::string>& name, int64_t /*wait_ms*/,
                                              std::optional<int64_t> /*keep_alive_ms*/) {
  WorkerRef worker = WorkerFor(name);
  if (worker == nullptr) {
    const std::string what = name ? "unknown model '" + *name + "'" : "no model is loaded";
    return NotFoundError(what + "; available: " + ModelNames()).WithReason(ErrorReason::kUnknownModel);
  }
  return worker;
}

inline std::string ServerState::ModelNames() const {
  std::string names;
  for (const auto& m : available()) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

}  // namespace llmd::sched

#endif  // LLMD_SCHED_SERVER_STATE_H_
