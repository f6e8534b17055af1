// ModelRegistry: the models the daemon can serve and which of them are loaded now (models on
// demand). Models come from the config (model_path, models: loaded at startup) and from the
// models directories (models_dir, system_models_dirs: loaded when a request names one).
//
// - Loading: a request for a model that is not loaded queues one load (concurrent requests
//   for it share it) and waits; the load runs on the registry's loader thread, never on a
//   serving thread, so the loaded models keep serving meanwhile.
// - Budget: what the loaded models take (the loader's measured bytes) is counted against the
//   memory budget. Before a load, if its estimate does not fit, idle models (no lease, no
//   waiter) are unloaded least recently used first; never a pinned one (the default model,
//   the guard), nor one a request's own keep_alive still keeps. If it still does not fit, the
//   load is refused with the numbers (needed, free, budget), and so is a load whose measured
//   size turns out not to fit.
// - keep_alive: an idle model is unloaded when its keep_alive (the last request's, else its
//   default: models_keep_alive for on-demand models, never for configured ones) has run out
//   since its last lease ended; 0 unloads it as soon as no request holds it.
// - Withdrawal: a model removed from disk is no longer listed nor served; if loaded, it is
//   unloaded once no request holds it.
//
// Leases: Acquire hands out a WorkerRef whose last copy gives the lease back. An unload takes
// the worker out of the registry under the lock (so no new lease), then stops it and frees its
// engine outside the lock; the worker object itself lives on while listings hold it.
//
// Thread-safety: every public method is thread-safe. The registry must outlive every lease
// (the daemon joins the handlers before it goes).
#ifndef LLMD_DAEMON_MODEL_REGISTRY_H_
#define LLMD_DAEMON_MODEL_REGISTRY_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "sched/server_state.h"

namespace llmd::daemon {

// A model the registry can serve.
struct ModelSource {
  std::string name;
  std::string path;            // the weights file
  bool embedding = false;      // serves embeddings
  bool configured = false;     // named by the config (model_path, models); else found on disk
  bool pinned = false;         // never unloaded: the default model and the guard
  int64_t keep_alive_ms = -1;  // idle time before it is unloaded; < 0: never
  // A manifest's TEMPLATE (Jinja): the chat template the model loads with, in place of its
  // GGUF's; empty: the GGUF's.
  std::string chat_template;
  // What one request may hold once it loads (the config's max_context_len, else the automatic
  // context sized from its file); 0: not known before it loads. For listings (/api/show).
  int32_t context_tokens = 0;
};

// A model the loader made ready.
struct LoadedModel {
  std::shared_ptr<sched::EngineWorker> worker;
  uint64_t bytes = 0;  // what the budget counts for it
};

class ModelRegistry {
 public:
  // Loads a model (pre-check, engine, warm-up, worker): on the loader thread.
  using Loader = std::function<Result<LoadedModel>(const ModelSource&)>;
  // What a model is expected to take once loaded, before loading it (bytes).
  using Estimator = std::function<uint64_t(const ModelSource&)>;

  // `budget_bytes`: 0 for none.
  ModelRegistry(uint64_t budget_bytes, Loader loader, Estimator estimate, const Clock& clock = RealClock::Get());
  ~ModelRegistry();  // Stop()
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Startup, before Start: a configured model, loaded (`loaded`) or not (nullopt).
  void AddConfigured(ModelSource source, std::optional<LoadedModel> loaded);
  // The models found on disk, replacing the last set (configured names win a clash). One no
  // longer there is withdrawn: unlisted at once, unloaded once no request holds it.
  void SetDiscovered(std::vector<ModelSource> sources);
  void Start();  // the loader thread
  // Ends the loader thread, fails the waiting requests and stops every loaded worker (their
  // running and queued jobs get their final events). The workers are kept until Clear.
  void Stop();
  // Frees every worker (after the handlers that use them are joined).
  void Clear();

  sched::ModelList Loaded() const;
  std::vector<sched::AvailableModel> Available() const;
  // The model `name` (none: the default) would run as, if it can be served (exact, or without
  // ":latest").
  std::optional<ModelSource> Find(const std::optional<std::string>& name) const;
  // ServerState::Acquire.
  Result<sched::WorkerRef> Acquire(const std::optional<std::string>& name, int64_t wait_ms,
                                   std::optional<int64_t> keep_alive_ms);
  // Whether requests hold the model `name` (leases), wait for it, or it is loading: a delete
  // is refused then. By its exact name; withdrawn entries still unloading count too.
  bool InUse(const std::string& name) const;
  // What the loaded models take, and the budget (bytes; 0: none).
  uint64_t used_bytes() const;
  uint64_t budget_bytes() const { return budget_; }
  // The budget, what is used now, and the loads and unloads so far (/metrics).
  sched::ModelLoadStats load_stats() const;

 private:
  enum class State { kUnloaded, kLoading, kLoaded };
  struct Entry {
    ModelSource source;
    bool listed = true;  // false: withdrawn, kept only until it is unloaded
    State state = State::kUnloaded;
    std::shared_ptr<sched::EngineWorker> worker;  // while loaded
    uint64_t bytes = 0;        // counted while loading (the estimate) and loaded (measured)
    uint64_t measured = 0;     // the last load's measured bytes
    int leases = 0;
    int waiting = 0;           // requests waiting for its load
    bool queued = false;       // a load is queued
    int64_t last_used_ms = 0;  // when its last lease ended (or it loaded)
    std::optional<int64_t> request_keep_alive_ms;  // the last request's keep_alive
    uint64_t loads_ended = 0;  // loads finished, failed or not
    Status load_error;         // the last load's, for its waiters
  };
  using EntryPtr = std::shared_ptr<Entry>;

  EntryPtr FindLocked(const std::optional<std::string>& name) const;
  sched::WorkerRef LeaseLocked(const EntryPtr& entry);
  void Release(const EntryPtr& entry);
  int64_t KeepAliveOf(const Entry& e) const;
  // Whether a request's own keep_alive still keeps `e` (an eviction may not take it).
  bool KeptByRequest(const Entry& e, int64_t now) const;
  bool IdleLocked(const Entry& e) const;
  uint64_t UsedLocked() const;
  // Takes `e`'s worker out (no more leases); the caller frees it outside the lock (Unload).
  std::shared_ptr<sched::EngineWorker> DetachLocked(Entry& e, sched::ModelUnload why);
  static void Unload(const std::shared_ptr<sched::EngineWorker>& worker);
  // Idle models that may be evicted to make room, least recently used first.
  std::vector<EntryPtr> EvictionOrderLocked(const Entry& for_entry, int64_t now) const;
  // Evicts until `needed` fits; the workers to free go to `freed`. False when it cannot.
  bool MakeRoomLocked(const Entry& for_entry, uint64_t needed, std::vector<std::shared_ptr<sched::EngineWorker>>* freed);
  std::string NoRoomMessage(const Entry& e, uint64_t needed) const;
  // A load of `e` (needing `needed` bytes) refused for want of room: counted, logged, its error.
  Status RefusedLocked(const Entry& e, uint64_t needed);
  void Run();
  void LoadOne(std::unique_lock<std::mutex>& lock, const EntryPtr& entry);
  // Unloads what is due (keep_alive out, withdrawn); returns the next time something may be.
  int64_t UnloadDueLocked(std::vector<std::shared_ptr<sched::EngineWorker>>* freed, int64_t now);

  const uint64_t budget_;
  const Loader loader_;
  const Estimator estimate_;
  const Clock& clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;         // loads ended, leases given back, work for the loader
  std::vector<EntryPtr> entries_;      // configured first (the default first), then by name
  std::deque<EntryPtr> load_queue_;
  sched::ModelLoadStats counts_;       // the counters (budget and used are filled when read)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_MODEL_REGISTRY_H_
