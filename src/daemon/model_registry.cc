#include "daemon/model_registry.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/log.h"

namespace llmd::daemon {
namespace {

std::string MiB(uint64_t bytes) { return std::to_string(bytes >> 20); }

// The log's words for why a model goes (tests and operators grep them).
const char* UnloadLogText(sched::ModelUnload why) {
  switch (why) {
    case sched::ModelUnload::kKeepAlive: return "keep_alive";
    case sched::ModelUnload::kMemoryBudget: return "memory budget";
    case sched::ModelUnload::kRemoved: return "removed from disk";
  }
  return "?";
}

}  // namespace

ModelRegistry::ModelRegistry(uint64_t budget_bytes, Loader loader, Estimator estimate, const Clock& clock)
    : budget_(budget_bytes), loader_(std::move(loader)), estimate_(std::move(estimate)), clock_(clock) {}

ModelRegistry::~ModelRegistry() { Stop(); }

void ModelRegistry::AddConfigured(ModelSource source, std::optional<LoadedModel> loaded) {
  auto e = std::make_shared<Entry>();
  e->source = std::move(source);
  e->source.configured = true;
  if (loaded) {
    e->state = State::kLoaded;
    e->worker = std::move(loaded->worker);
    e->bytes = e->measured = loaded->bytes;
  }
  std::lock_guard<std::mutex> lock(mu_);
  e->last_used_ms = clock_.NowMs();
  if (e->state == State::kLoaded) ++counts_.loads;
  // Configured models stay in their config order, before the ones found on disk.
  auto first_found = std::find_if(entries_.begin(), entries_.end(), [](const EntryPtr& x) { return !x->source.configured; });
  entries_.insert(first_found, std::move(e));
}

void ModelRegistry::SetDiscovered(std::vector<ModelSource> sources) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<EntryPtr> found;
  for (auto& src : sources) {
    src.configured = false;
    src.pinned = false;
    const bool configured = std::any_of(entries_.begin(), entries_.end(), [&](const EntryPtr& x) {
      return x->source.configured && x->source.name == src.name;
    });
    if (configured) continue;  // the config's model of that name wins
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const EntryPtr& x) {
      return !x->source.configured && x->source.name == src.name;
    });
    EntryPtr e;
    if (it != entries_.end()) {
      e = *it;
      if (!e->listed) Log(LogLevel::kInfo, "model_listed_again", {{"name", src.name}});
    } else {
      e = std::make_shared<Entry>();
      Log(LogLevel::kInfo, "model_found", {{"name", src.name}, {"path", src.path}});
    }
    e->source = std::move(src);  // the next load uses the file as it is now
    e->listed = true;
    found.push_back(std::move(e));
  }
  std::vector<EntryPtr> next;
  for (const EntryPtr& e : entries_) {
    if (e->source.configured) {
      next.push_back(e);
      continue;
    }
    if (std::find(found.begin(), found.end(), e) != found.end()) continue;
    if (e->listed) Log(LogLevel::kInfo, "model_withdrawn", {{"name", e->source.name}, {"loaded", e->state == State::kLoaded ? "yes" : "no"}});
    e->listed = false;
    // Kept until it is unloaded, or while a load or a request still refers to it.
    if (e->state != State::kUnloaded || e->waiting > 0 || e->queued) next.push_back(e);
  }
  std::sort(found.begin(), found.end(), [](const EntryPtr& a, const EntryPtr& b) { return a->source.name < b->source.name; });
  next.insert(next.end(), found.begin(), found.end());
  entries_ = std::move(next);
  cv_.notify_all();  // a withdrawn idle model is unloaded now
}

void ModelRegistry::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void ModelRegistry::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::vector<std::shared_ptr<sched::EngineWorker>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const EntryPtr& e : entries_) {
      if (e->worker) workers.push_back(e->worker);
    }
  }
  for (auto& w : workers) w->Stop();  // running and queued requests get their final events
}

void ModelRegistry::Clear() {
  std::vector<EntryPtr> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    entries.swap(entries_);
    load_queue_.clear();
  }
  entries.clear();  // the workers go here, outside the lock
}

sched::ModelList ModelRegistry::Loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  sched::ModelList out;
  for (const EntryPtr& e : entries_) {
    if (e->state == State::kLoaded) out.emplace_back(e->source.name, e->worker);
  }
  return out;
}

std::vector<sched::AvailableModel> ModelRegistry::Available() const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.NowMs();
  std::vector<sched::AvailableModel> out;
  for (const EntryPtr& e : entries_) {
    if (!e->listed) continue;
    sched::AvailableModel m;
    m.name = e->source.name;
    m.path = e->source.path;
    m.loaded = e->state == State::kLoaded;
    m.loading = e->state == State::kLoading;
    m.embedding = e->source.embedding;
    m.pinned = e->source.pinned;
    m.context_tokens = e->source.context_tokens;
    if (m.loaded) {
      m.memory_bytes = e->bytes;
      const int64_t keep = KeepAliveOf(*e);
      if (!e->source.pinned && IdleLocked(*e) && keep >= 0) m.expires_in_ms = std::max<int64_t>(0, e->last_used_ms + keep - now);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<ModelSource> ModelRegistry::Find(const std::optional<std::string>& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  EntryPtr e = FindLocked(name);
  if (!e) return std::nullopt;
  return e->source;
}

bool ModelRegistry::InUse(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const EntryPtr& e : entries_) {
    if (e->source.name == name && (e->leases > 0 || e->waiting > 0 || e->queued || e->state == State::kLoading)) {
      return true;
    }
  }
  return false;
}

ModelRegistry::EntryPtr ModelRegistry::FindLocked(const std::optional<std::string>& name) const {
  if (!name) return entries_.empty() || !entries_.front()->source.configured ? nullptr : entries_.front();
  for (const std::string& want : {*name, name->ends_with(":latest") ? name->substr(0, name->size() - 7) : std::string()}) {
    if (want.empty()) continue;
    for (const EntryPtr& e : entries_) {
      if (e->listed && e->source.name == want) return e;
    }
  }
  return nullptr;
}

Result<sched::WorkerRef> ModelRegistry::Acquire(const std::optional<std::string>& name, int64_t wait_ms,
                                                std::optional<int64_t> keep_alive_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return sched::ShuttingDownError();
  EntryPtr e = FindLocked(name);
  if (!e) {
    std::string names;
    for (const EntryPtr& x : entries_) {
      if (x->listed) names += (names.empty() ? "" : ", ") + x->source.name;
    }
    const std::string what = name ? "unknown model '" + *name + "'" : "no model is loaded";
    return NotFoundError(what + "; available: " + names).WithReason(ErrorReason::kUnknownModel);
  }
  // Ollama's rule: each request sets how long the model stays once idle (none: its default).
  e->request_keep_alive_ms = keep_alive_ms;
  if (e->state == State::kLoaded) return LeaseLocked(e);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, wait_ms));
  ++e->waiting;
  Status error;
  while (true) {
    if (e->state == State::kUnloaded && !e->queued) {
      e->queued = true;
      load_queue_.push_back(e);
      cv_.notify_all();
    }
    const uint64_t ended = e->loads_ended;
    auto done = [&] { return stopping_ || e->state == State::kLoaded || e->loads_ended != ended; };
    bool in_time = true;
    if (wait_ms > 0) in_time = cv_.wait_until(lock, deadline, done);
    else cv_.wait(lock, done);
    if (stopping_) {
      error = sched::ShuttingDownError();
      break;
    }
    if (e->state == State::kLoaded) break;
    if (!in_time) {
      error = ResourceExhaustedError("model '" + e->source.name + "' is loading and was not ready within the request's " +
                                     std::to_string(wait_ms) + " ms; retry shortly");
      break;
    }
    if (!e->load_error.ok()) {
      error = e->load_error;
      break;
    }
    // It loaded and went again before this request woke: load it again.
  }
  --e->waiting;
  if (!error.ok()) {
    cv_.notify_all();
    return error;
  }
  return LeaseLocked(e);
}

sched::WorkerRef ModelRegistry::LeaseLocked(const EntryPtr& entry) {
  ++entry->leases;
  std::shared_ptr<sched::EngineWorker> worker = entry->worker;
  sched::EngineWorker* raw = worker.get();
  // The worker lives as long as the lease; the lease's end is counted.
  return sched::WorkerRef(raw, [this, entry, worker = std::move(worker)](sched::EngineWorker*) { Release(entry); });
}

void ModelRegistry::Release(const EntryPtr& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  --entry->leases;
  entry->last_used_ms = clock_.NowMs();
  if (entry->leases == 0) cv_.notify_all();  // keep_alive runs from now (0: unload now)
}

int64_t ModelRegistry::KeepAliveOf(const Entry& e) const {
  const int64_t keep = e.request_keep_alive_ms.value_or(e.source.keep_alive_ms);
  return keep < 0 ? -1 : keep;
}

bool ModelRegistry::KeptByRequest(const Entry& e, int64_t now) const {
  if (!e.request_keep_alive_ms) return false;
  const int64_t keep = *e.request_keep_alive_ms;
  return keep < 0 || now - e.last_used_ms < keep;
}

bool ModelRegistry::IdleLocked(const Entry& e) const { return e.leases == 0 && e.waiting == 0; }

uint64_t ModelRegistry::UsedLocked() const {
  uint64_t used = 0;
  for (const EntryPtr& e : entries_) {
    if (e->state != State::kUnloaded) used += e->bytes;
  }
  return used;
}

uint64_t ModelRegistry::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return UsedLocked();
}

sched::ModelLoadStats ModelRegistry::load_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  sched::ModelLoadStats out = counts_;
  out.budget_bytes = budget_;
  out.used_bytes = UsedLocked();
  return out;
}

std::shared_ptr<sched::EngineWorker> ModelRegistry::DetachLocked(Entry& e, sched::ModelUnload why) {
  ++counts_.unloads[static_cast<int>(why)];
  Log(LogLevel::kInfo, "model_unloading",
      {{"name", e.source.name}, {"why", UnloadLogText(why)}, {"memory_mib", MiB(e.bytes)},
       {"used_mib", MiB(UsedLocked() - e.bytes)}, {"budget_mib", MiB(budget_)}});
  e.state = State::kUnloaded;
  e.bytes = 0;
  return std::move(e.worker);
}

void ModelRegistry::Unload(const std::shared_ptr<sched::EngineWorker>& worker) {
  if (!worker) return;
  // Stops the thread and frees the engine (weights and all) here; the worker object stays
  // for whoever still holds it (a listing), stopped.
  std::unique_ptr<engine::Engine> engine = worker->Release();
  engine.reset();
}

std::vector<ModelRegistry::EntryPtr> ModelRegistry::EvictionOrderLocked(const Entry& for_entry, int64_t now) const {
  std::vector<EntryPtr> out;
  for (const EntryPtr& e : entries_) {
    if (e.get() == &for_entry || e->state != State::kLoaded || e->source.pinned || !IdleLocked(*e)) continue;
    if (KeptByRequest(*e, now)) continue;
    out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const EntryPtr& a, const EntryPtr& b) { return a->last_used_ms < b->last_used_ms; });
  return out;
}

bool ModelRegistry::MakeRoomLocked(const Entry& for_entry, uint64_t needed,
                                   std::vector<std::shared_ptr<sched::EngineWorker>>* freed) {
  if (budget_ == 0) return true;
  uint64_t others = UsedLocked() - (for_entry.state != State::kUnloaded ? for_entry.bytes : 0);
  if (others + needed <= budget_) return true;
  const std::vector<EntryPtr> order = EvictionOrderLocked(for_entry, clock_.NowMs());
  // Nothing is evicted unless evicting can make it fit.
  uint64_t evictable = 0;
  for (const EntryPtr& e : order) evictable += e->bytes;
  if (others - evictable + needed > budget_) return false;
  for (const EntryPtr& e : order) {
    if (others + needed <= budget_) break;
    others -= e->bytes;
    freed->push_back(DetachLocked(*e, sched::ModelUnload::kMemoryBudget));
  }
  return true;
}

std::string ModelRegistry::NoRoomMessage(const Entry& e, uint64_t needed) const {
  const uint64_t used = UsedLocked() - (e.state != State::kUnloaded ? e.bytes : 0);
  const uint64_t free = used < budget_ ? budget_ - used : 0;
  std::string held;
  const int64_t now = clock_.NowMs();
  for (const EntryPtr& x : entries_) {
    if (x.get() == &e || x->state == State::kUnloaded) continue;
    const char* why = x->source.pinned           ? "pinned"
                      : !IdleLocked(*x)          ? "in use"
                      : KeptByRequest(*x, now)   ? "kept alive"
                      : x->state == State::kLoading ? "loading"
                                                    : "idle";
    held += (held.empty() ? "" : ", ") + x->source.name + " " + MiB(x->bytes) + " MiB " + why;
  }
  return "model '" + e.source.name + "' needs " + MiB(needed) + " MiB; " + MiB(free) + " MiB of the memory budget of " +
         MiB(budget_) + " MiB are free, and unloading every idle model would not make room (loaded: " + held +
         "); retry when a model is idle, or raise memory_budget_mb";
}

Status ModelRegistry::RefusedLocked(const Entry& e, uint64_t needed) {
  const std::string message = NoRoomMessage(e, needed);
  ++counts_.load_refusals;
  Log(LogLevel::kWarn, "model_load_refused", {{"name", e.source.name}, {"error", message}});
  return ResourceExhaustedError(message);
}

int64_t ModelRegistry::UnloadDueLocked(std::vector<std::shared_ptr<sched::EngineWorker>>* freed, int64_t now) {
  int64_t next = -1;
  for (const EntryPtr& e : entries_) {
    if (e->state != State::kLoaded || e->source.pinned || !IdleLocked(*e)) continue;
    if (!e->listed) {
      freed->push_back(DetachLocked(*e, sched::ModelUnload::kRemoved));
      continue;
    }
    const int64_t keep = KeepAliveOf(*e);
    if (keep < 0) continue;
    if (now - e->last_used_ms >= keep) {
      freed->push_back(DetachLocked(*e, sched::ModelUnload::kKeepAlive));
    } else {
      const int64_t at = e->last_used_ms + keep;
      next = next < 0 ? at : std::min(next, at);
    }
  }
  // Withdrawn models nobody refers to any more are forgotten.
  std::erase_if(entries_, [](const EntryPtr& e) {
    return !e->listed && e->state == State::kUnloaded && e->waiting == 0 && !e->queued && e->leases == 0;
  });
  return next;
}

void ModelRegistry::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    std::vector<std::shared_ptr<sched::EngineWorker>> freed;
    const int64_t now = clock_.NowMs();
    const int64_t next = UnloadDueLocked(&freed, now);
    if (!freed.empty()) {
      lock.unlock();
      for (auto& w : freed) Unload(w);
      lock.lock();
      continue;
    }
    if (!load_queue_.empty()) {
      EntryPtr e = std::move(load_queue_.front());
      load_queue_.pop_front();
      LoadOne(lock, e);
      continue;
    }
    if (next < 0) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, next - now)));
    }
  }
}

void ModelRegistry::LoadOne(std::unique_lock<std::mutex>& lock, const EntryPtr& e) {
  // `queued` stays set until the load begins or ends, so no request queues a second one.
  if (e->state != State::kUnloaded) {
    e->queued = false;
    return;
  }
  auto finish = [&](Status error) {  // mu_ held
    e->queued = false;
    e->load_error = std::move(error);
    ++e->loads_ended;
    cv_.notify_all();
  };
  if (!e->listed) {
    finish(NotFoundError("model '" + e->source.name + "' was removed from its models directory")
               .WithReason(ErrorReason::kUnknownModel));
    return;
  }
  if (e->waiting == 0) {  // every request that wanted it gave up
    finish(Status::Ok());
    return;
  }
  const ModelSource source = e->source;
  const uint64_t measured = e->measured;
  lock.unlock();
  const uint64_t needed = std::max(estimate_(source), measured);
  lock.lock();
  std::vector<std::shared_ptr<sched::EngineWorker>> freed;
  if (!MakeRoomLocked(*e, needed, &freed)) {
    finish(RefusedLocked(*e, needed));
    return;
  }
  e->state = State::kLoading;
  e->queued = false;
  e->bytes = needed;  // counted while it loads
  Log(LogLevel::kInfo, "model_loading_on_demand",
      {{"name", source.name}, {"path", source.path}, {"estimate_mib", MiB(needed)},
       {"used_mib", MiB(UsedLocked())}, {"budget_mib", MiB(budget_)}});
  lock.unlock();
  for (auto& w : freed) Unload(w);  // their memory is back before the load begins
  freed.clear();
  const int64_t started = clock_.NowMs();
  Result<LoadedModel> loaded = loader_(source);
  lock.lock();
  if (!loaded.has_value()) {
    e->state = State::kUnloaded;
    e->bytes = 0;
    ++counts_.load_failures;
    Log(LogLevel::kWarn, "model_load_failed", {{"name", source.name}, {"error", loaded.error().ToString()}});
    finish(loaded.error().WithContext("model '" + source.name + "'"));
    return;
  }
  e->measured = loaded->bytes;
  e->bytes = loaded->bytes;
  if (!MakeRoomLocked(*e, loaded->bytes, &freed)) {
    // It takes more than estimated, and that does not fit: give it up.
    Status refused = RefusedLocked(*e, loaded->bytes);
    e->state = State::kUnloaded;
    e->bytes = 0;
    finish(std::move(refused));
    lock.unlock();
    Unload(loaded->worker);
    lock.lock();
    return;
  }
  e->worker = std::move(loaded->worker);
  e->state = State::kLoaded;
  e->last_used_ms = clock_.NowMs();
  ++counts_.loads;
  Log(LogLevel::kInfo, "model_loaded_on_demand",
      {{"name", source.name}, {"memory_mib", MiB(e->bytes)}, {"used_mib", MiB(UsedLocked())},
       {"budget_mib", MiB(budget_)}, {"load_ms", std::to_string(e->last_used_ms - started)},
       {"waiting", std::to_string(e->waiting)}});
  finish(Status::Ok());
  if (!freed.empty()) {
    lock.unlock();
    for (auto& w : freed) Unload(w);
    lock.lock();
  }
}

}  // namespace llmd::daemon
