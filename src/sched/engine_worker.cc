#include "sched/engine_worker.h"

// EngineWorker's thread, its queue and admission, the engine's lifecycle (swap, idle
// release), sessions and stats. The other parts: engine_worker_admit.cc (the prompt
// preparer), engine_worker_step.cc (the decode step), engine_worker_reply.cc (sampling and
// replies), engine_worker_reuse.cc (prefix reuse), engine_worker_speculative.cc (drafts).
#include <algorithm>
#include <utility>

#if defined(__GLIBC__)  // defined by the headers above
#include <malloc.h>
#endif

#include "common/log.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

EngineWorker::EngineWorker(std::unique_ptr<engine::Engine> engine, WorkerOptions options)
    : options_(std::move(options)),
      clock_(*options_.clock),
      queue_(options_.queue_depth),
      sessions_(options_.max_sessions),
      engine_(std::move(engine)),
      checkpoints_(options_.checkpoint_budget_bytes) {
  ResetSlots();
  PinPrompts();  // before the thread starts: a daemon that says ready has them
  placement_ = engine_->model_info().placement;
  PublishHealth();
  last_progress_ms_ = clock_.NowMs();
  StartIdleTime(std::nullopt);  // idle from the start: an unused model is released too
  thread_ = std::thread([this] { Run(); });
}

EngineWorker::~EngineWorker() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

Status EngineWorker::Submit(Job job) {
  if (options_.memory_guard != nullptr) LLMD_RETURN_IF_ERROR(options_.memory_guard->Check());
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return ShuttingDownError();
  if (job.first_token_deadline_ms) {
    const WaitEstimate estimate = EstimateLocked(job.request_class, RoughPromptTokens(job.prompt));
    if (estimate.known && estimate.first_token_ms() > *job.first_token_deadline_ms) {
      return DeadlineUnmeetableError(estimate, *job.first_token_deadline_ms);
    }
  }
  job.submitted_ms = clock_.NowMs();
  const Holder holder{job.request_class, job.peer_uid};
  LLMD_RETURN_IF_ERROR(queue_.Push(std::move(job)));
  // A job the next admission takes stops a running call that stands below it (RunCalls).
  // Written under mu_ only; the engine's compute thread reads it.
  if (MayAdmit(holder, admission_holders_, width_.load(), admission_free_)) {
    const bool peers_first = std::none_of(admission_holders_.begin(), admission_holders_.end(), [&](const Holder& h) {
      return h.request_class == holder.request_class && h.peer_uid == holder.peer_uid;
    });
    const int standing = Standing(holder.request_class, peers_first, /*prompt=*/true);
    if (standing < arrived_standing_.load()) {
      arrived_us_ = clock_.NowUs();  // before the standing: a call that sees it stop reads this time
      arrived_standing_ = standing;
    }
  }
  cv_.notify_one();
  return Status::Ok();
}

void EngineWorker::SwapEngine(std::unique_ptr<engine::Engine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(engine);
  cv_.notify_one();
}

void EngineWorker::Stop() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped = queue_.TakeAll();
    for (auto& ch : running_) ch->Cancel();
    cv_.notify_one();
  }
  for (auto& job : dropped) job.channel->Push(JobEvent::Error(ShuttingDownError()));
}

std::unique_ptr<engine::Engine> EngineWorker::Release() {
  Stop();
  if (thread_.joinable()) thread_.join();
  std::unique_lock<std::shared_mutex> engine_lock(engine_mu_);
  return std::move(engine_);
}

Result<std::vector<engine::TokenId>> EngineWorker::Tokenize(std::string_view text, bool add_special,
                                                            bool parse_special) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return ShuttingDownError();
  }
  std::shared_lock<std::shared_mutex> engine_lock(engine_mu_);
  if (engine_ == nullptr) return ShuttingDownError();
  return engine_->Tokenize(text, add_special, parse_special);
}

Result<std::string> EngineWorker::Detokenize(const std::vector<engine::TokenId>& tokens, bool render_special) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return ShuttingDownError();
  }
  std::shared_lock<std::shared_mutex> engine_lock(engine_mu_);
  if (engine_ == nullptr) return ShuttingDownError();
  return engine_->Detokenize(tokens, render_special);
}

std::vector<engine::DevicePlacement> EngineWorker::placement() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return placement_;
}

HealthSnapshot EngineWorker::health() const {
  return {model_loaded_.load(), device_index_.load(), kv_usage_.load(), fingerprint_.load(), vocab_size_.load(),
          context_tokens_.load()};
}

void EngineWorker::PublishHealth() {
  if (!engine_) {
    model_loaded_ = false;
    kv_usage_ = 0.0f;
    return;
  }
  const engine::ModelInfo& info = engine_->model_info();
  model_loaded_ = engine_->loaded();
  device_index_ = info.device_index;
  fingerprint_ = info.fingerprint;
  vocab_size_ = info.vocab_size;
  context_tokens_ = info.context_tokens;
  size_t used = 0;
  for (const auto& s : slots_) used += s->resident.size();
  const double cells = info.pool_tokens > 0
                           ? static_cast<double>(info.pool_tokens)
                           : static_cast<double>(info.context_tokens) * std::max<size_t>(1, slots_.size());
  kv_usage_ = static_cast<float>(used / cells);
  const engine::MemoryUse memory = engine_->memory_use();
  std::lock_guard<std::mutex> lock(stats_mu_);
  memory_ = memory;
}

void EngineWorker::ResetSlots() {
  slots_.clear();
  for (int32_t i = 0; i < engine_->sequences(); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->sequence = i;
  }
  width_ = DecodeWidth();
  ClearMemory();
}

// The worker owns what the sequences hold: an engine it takes (warmed up, swapped in) starts
// empty, so the slots' bookkeeping matches the memory.
void EngineWorker::ClearMemory() {
  for (auto& s : slots_) {
    s->resident.clear();
    s->prompt_end.reset();
    if (Status st = engine_->TruncateSequence(s->sequence, 0); !st.ok()) {
      Log(LogLevel::kError, "sequence_clear_failed", {{"error", st.ToString()}});
    }
  }
  checkpoints_.Clear();
}

void EngineWorker::StartIdleTime(std::optional<int64_t> keep_alive_ms) {
  idle_since_ms_ = clock_.NowMs();
  release_after_ms_ = keep_alive_ms.value_or(options_.idle_release_after_ms);
}

void EngineWorker::KeepAlive(int64_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  StartIdleTime(ms);
  cv_.notify_all();  // an idle engine thread looks again now
}

bool EngineWorker::ReleaseDue() const {
  if (release_after_ms_ < 0 || !engine_) return false;
  if (clock_.NowMs() - idle_since_ms_ < release_after_ms_) return false;
  std::lock_guard<std::mutex> lock(stats_mu_);
  return memory_.working_memory;
}

// Off the queue lock: submitters and stats readers go on while the memory is freed.
void EngineWorker::ReleaseWorkingMemory() {
  std::unique_lock<std::shared_mutex> engine_lock(engine_mu_);
  const engine::MemoryUse before = engine_->memory_use();
  ClearMemory();  // the slots' bookkeeping and the checkpoints go with the memory
  engine_->ReleaseWorkingMemory();
#if defined(__GLIBC__)
  // The freed checkpoints (heap strings of a few MiB each) stay in glibc's arenas otherwise:
  // measured 186 MiB kept on the hybrid 0.8B shape after a release.
  malloc_trim(0);
#endif
  const engine::MemoryUse after = engine_->memory_use();
  engine_lock.unlock();
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    memory_ = after;
    ++releases_;
  }
  Log(LogLevel::kInfo, "working_memory_released",
      {{"model", engine_->model_info().description},
       {"kv_resident_mib", std::to_string(before.kv.resident >> 20)},
       {"compute_mib", std::to_string(before.compute.reserved >> 20)}});
}

bool EngineWorker::AnyBusy() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
}

void EngineWorker::Run() {
  while (true) {
    std::vector<Job> admitted = TakeAdmissions();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && !AnyBusy() && admitted.empty()) return;
    }
    for (auto& job : admitted) Admit(std::move(job));
    const bool stepped = Step();
    if (!stepped && AnyBusy()) {
      // Every busy slot sits out (background paused or throttled by the device's condition,
      // or waiting on a shared prefix): rest until something arrives or the policy may change.
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !stopping_) cv_.wait_for(lock, kSittingOutRest);
    }
    last_progress_ms_ = clock_.NowMs();
    PublishHealth();
  }
}

std::vector<Job> EngineWorker::TakeAdmissions() {
  std::unique_lock<std::mutex> lock(mu_);
  const size_t busy = std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
  if (busy > 0) {
    busy_peak_ = std::max(busy_peak_, busy);
  } else if (busy_peak_ > 0) {  // a busy period just ended
    last_peak_ = std::exchange(busy_peak_, 0);
  }
  // Idle: wake now and then so the watchdog sees a live thread, and free the working memory
  // once the idle time has run out.
  while (!stopping_ && queue_.empty() && !pending_ && !AnyBusy()) {
    if (ReleaseDue()) {
      lock.unlock();
      ReleaseWorkingMemory();
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, options_.idle_heartbeat);
    last_progress_ms_ = clock_.NowMs();
  }
  // Waking from idle after serving several requests at once: those clients tend to send
  // their next requests together, a few ms apart. Let them arrive so they share the first
  // prefill step instead of the late ones queueing behind an early one's whole prompt. A lone
  // client (the last busy period served one request at a time) never waits. The window ends
  // early only when every slot has a request: the last peak undercounts a split burst.
  if (busy == 0 && last_peak_ >= 2 && !queue_.empty() && !stopping_) {
    const int64_t end = clock_.NowMs() + options_.admission_window_ms;
    while (!stopping_ && queue_.size() < DecodeWidth() && clock_.NowMs() < end) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
  SwapWhenIdle(lock);
  ExpireQueued();
  return PopAdmissible();
}

void EngineWorker::ExpireQueued() {
  for (Job& job : queue_.TakeExpired(clock_.NowMs())) {
    job.channel->Push(JobEvent::Error(
        DeadlineExceededError("the first-token deadline of " + std::to_string(*job.first_token_deadline_ms) +
                              " ms passed while the request waited for a slot")));
  }
}

WaitEstimate EngineWorker::EstimateFirstToken(RequestClass c, size_t prompt_tokens) const {
  std::lock_guard<std::mutex> lock(mu_);
  return EstimateLocked(c, prompt_tokens);
}

std::vector<EngineWorker::QueuedJob> EngineWorker::Queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  const MeasuredCosts costs = Costs();
  const std::vector<const Job*> order = queue_.InOrder();
  std::vector<QueuedJob> queued;
  for (size_t i = 0; i < order.size(); ++i) {
    const Job& job = *order[i];
    size_t busy = 0;
    for (int k = 0; k <= ClassIndex(job.request_class); ++k) busy += busy_by_class_[k].load();
    // Everything before it in the order is of its class or higher.
    queued.push_back({.peer_uid = job.peer_uid,
                      .request_class = job.request_class,
                      .position = i + 1,
                      .waited_ms = clock_.NowMs() - job.submitted_ms,
                      .estimate = EstimateWait(costs, busy, i, width_.load(), RoughPromptTokens(job.prompt))});
  }
  return queued;
}

MeasuredCosts EngineWorker::Costs() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return costs_;
}

void EngineWorker::Unadmit(const Job& job, JobEvent end) {
  job.channel->Push(std::move(end));
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(running_, job.channel);
}

WaitEstimate EngineWorker::EstimateLocked(RequestClass c, size_t prompt_tokens) const {
  size_t busy = 0;
  for (int k = 0; k <= ClassIndex(c); ++k) busy += busy_by_class_[k].load();
  return EstimateWait(Costs(), busy, queue_.AheadOf(c), width_.load(), prompt_tokens);
}

// A new engine is swapped in between jobs: admissions wait until the slots drain.
void EngineWorker::SwapWhenIdle(std::unique_lock<std::mutex>& lock) {
  if (!pending_ || AnyBusy()) return;
  std::unique_ptr<engine::Engine> next = std::move(pending_);
  lock.unlock();  // the swap and the old engine's release happen off the queue lock
  {
    std::unique_lock<std::shared_mutex> engine_lock(engine_mu_);
    engine_ = std::move(next);  // the old engine is released here
    draft_governor_ = DraftGovernor();  // what drafts cost was the old engine's
    ResetSlots();  // one slot per sequence of the new engine: a reload may change their number
    PinPrompts();  // the old engine's pinned states are not this one's
  }
  {
    std::lock_guard<std::mutex> stats_lock(stats_mu_);
    placement_ = engine_->model_info().placement;
  }
  PublishHealth();
  lock.lock();
  StartIdleTime(std::nullopt);
}

std::vector<Job> EngineWorker::PopAdmissible() {
  std::vector<Job> admitted;
  arrived_standing_ = kNoStanding;
  arrived_us_ = -1;
  admission_holders_.clear();
  admission_free_ = 0;
  if (pending_ || stopping_) return admitted;
  std::vector<Holder>& holders = admission_holders_;  // of the busy slots and the jobs admitted here
  size_t& free_slots = admission_free_;
  for (const auto& s : slots_) {
    if (s->busy) holders.push_back({s->job.request_class, s->job.peer_uid});
    else ++free_slots;
  }
  while (free_slots > 0) {
    // The first peer in turn that may take a sequence: one that may not (its requests already
    // fill its share) does not hold the others back.
    const Job* next = nullptr;
    for (const Job* head : queue_.Heads()) {
      if (MayAdmit({head->request_class, head->peer_uid}, holders, DecodeWidth(), free_slots)) {
        next = head;
        break;
      }
    }
    if (next == nullptr) break;
    const Holder holder{next->request_class, next->peer_uid};
    admitted.push_back(queue_.Take(next));
    holders.push_back(holder);
    ++metrics_.admitted_by_class[ClassIndex(holder.request_class)];
    running_.push_back(admitted.back().channel);
    --free_slots;
  }
  return admitted;
}

size_t EngineWorker::DecodeWidth() const {
  return options_.decode_width == 0 ? slots_.size() : std::min(options_.decode_width, slots_.size());
}

Status EngineWorker::EndSession(const std::string& session) {
  if (!sessions_.Erase(session)) return NotFoundError("no chat session '" + session + "'");
  return Status::Ok();
}

Result<std::pair<std::string, std::vector<engine::TokenId>>> EngineWorker::GetSession(
    const std::string& session) const {
  std::optional<StoredSession> stored = sessions_.Get(session);
  if (!stored.has_value()) return NotFoundError("no chat session '" + session + "'");
  return std::make_pair(std::move(stored->system), std::move(stored->tokens));
}

void EngineWorker::PutSession(const std::string& session, std::string system, std::vector<engine::TokenId> tokens) {
  sessions_.Restore(session, {std::move(system), std::move(tokens), {}});
}

Result<StoredSession> EngineWorker::SessionCopy(const std::string& session) const {
  std::optional<StoredSession> stored = sessions_.Get(session);
  if (!stored.has_value()) return NotFoundError("no chat session '" + session + "'");
  return std::move(*stored);
}

void EngineWorker::PutSession(const std::string& session, StoredSession stored) {
  sessions_.Restore(session, std::move(stored));
}

WorkerStats EngineWorker::stats() const {
  WorkerStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.active = static_cast<uint32_t>(running_.size());
    s.queued = static_cast<uint32_t>(queue_.size());
    for (int c = 0; c < kRequestClasses; ++c) s.queued_by_class[c] = static_cast<uint32_t>(queue_.size(static_cast<RequestClass>(c)));
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  s.requests = finished_;
  s.generated_tokens = metrics_.generated_tokens.load();
  s.prompt_tokens = metrics_.prompt_tokens.load();
  s.cached_tokens = metrics_.cached_tokens.load();
  s.draft_tokens = metrics_.draft_tokens.load();
  s.accepted_draft_tokens = metrics_.accepted_draft_tokens.load();
  std::vector<double> sorted(ttfts_.begin(), ttfts_.end());
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) {
    return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
  };
  s.ttft_p50_ms = pct(0.5);
  s.ttft_p95_ms = pct(0.95);
  s.prefill_tokens_per_second = prefill_ms_ > 0 ? prefilled_ * 1000.0 / prefill_ms_ : 0;
  s.decode_tokens_per_second = decode_ms_ > 0 ? decoded_ * 1000.0 / decode_ms_ : 0;
  s.cached_token_ratio = s.prompt_tokens > 0 ? static_cast<double>(s.cached_tokens) / s.prompt_tokens : 0;
  s.sessions = static_cast<uint32_t>(sessions_.size());
  s.steps = steps_.load();
  s.prefix_copies = prefix_copies_.load();
  s.sequence_moves = sequence_moves_.load();
  s.checkpoints = checkpoints_.count();
  s.checkpoint_bytes = checkpoints_.bytes();
  s.checkpoint_hits = checkpoints_.hits();
  s.checkpoint_misses = checkpoints_.misses();
  s.memory = memory_;
  s.working_memory_releases = releases_;
  s.paused = paused_.load();
  s.preemptions = preemptions_.load();
  s.parked = parked_.load();
  s.parked_bytes = parked_bytes_.load();
  s.parks = parks_.load();
  s.recomputes = recomputes_.load();
  s.pinned_prefixes = pinned_count_.load();
  s.pinned_bytes = pinned_bytes_.load();
  s.pinned_hits = pinned_hits_.load();
  return s;
}

void EngineWorker::RecordFinished(const engine::GenerationStats& st) {
  metrics_.prompt_tokens += st.prompt_tokens;
  metrics_.cached_tokens += st.cached_tokens;
  metrics_.generated_tokens += st.generated_tokens;
  metrics_.draft_tokens += static_cast<uint64_t>(st.draft_tokens);
  metrics_.accepted_draft_tokens += static_cast<uint64_t>(st.accepted_draft_tokens);
  std::lock_guard<std::mutex> lock(stats_mu_);
  ++finished_;
  // Running means for wait estimates: recent requests count most.
  auto mean = [](double& m, double sample) { m = m == 0 ? sample : 0.8 * m + 0.2 * sample; };
  if (st.generated_tokens > 0) mean(costs_.slot_hold_ms, std::max(1.0, st.ttft_ms - st.queue_ms + st.decode_ms));
  if (const int32_t uncached = st.prompt_tokens - st.cached_tokens; uncached > 0 && st.prefill_ms > 0) {
    mean(costs_.prefill_ms_per_token, st.prefill_ms / uncached);
  }
  if (st.generated_tokens > 0) {
    prefilled_ += st.prompt_tokens - st.cached_tokens;
    prefill_ms_ += st.prefill_ms;
    decoded_ += st.generated_tokens - 1;
    decode_ms_ += st.decode_ms;
    ttfts_.push_back(st.ttft_ms);
    if (ttfts_.size() > 1000) ttfts_.pop_front();
  }
}

}  // namespace llmd::sched
