#include "sched/engine_worker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "chat/stop_strings.h"
#include "chat/think_stripper.h"
#include "common/clock.h"
#include "common/utf8.h"

namespace llmd::sched {

JobChannel::JobChannel() : event_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

JobChannel::~JobChannel() {
  if (event_fd_ >= 0) ::close(event_fd_);
}

void JobChannel::Push(JobEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  uint64_t one = 1;
  (void)!::write(event_fd_, &one, sizeof one);
}

std::optional<JobEvent> JobChannel::TryPop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.empty()) {
    uint64_t drain;
    (void)!::read(event_fd_, &drain, sizeof drain);  // nothing pending: clear readiness
    return std::nullopt;
  }
  JobEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

namespace {
int64_t NowMs() { return RealClock::Get().NowMs(); }
constexpr auto kAdmitWindow = std::chrono::milliseconds(10);
}  // namespace

// One KV sequence and the job running on it (engine thread only).
struct EngineWorker::Slot {
  int32_t sequence = 0;
  std::vector<engine::TokenId> resident;  // tokens in this sequence's KV cache, positions 0..n-1
  int64_t last_used = 0;

  bool busy = false;
  Job job;
  std::vector<engine::TokenId> prompt;
  size_t prefilled = 0;               // prompt tokens in the cache
  std::unique_ptr<engine::Sampler> sampler;
  int64_t budget = 0;                 // tokens still allowed
  engine::TokenId pending = 0;        // sampled, not yet decoded
  bool has_pending = false;
  Utf8StreamAssembler utf8;
  chat::ThinkStripper think;
  chat::StopStrings stops;
  engine::Completion out;
  int64_t prefill_start_ms = 0, first_token_ms = 0;
  std::chrono::steady_clock::time_point last_token;  // for the inter-token histogram
  double prefill_end_ms = 0;
};

EngineWorker::EngineWorker(std::unique_ptr<engine::Engine> engine, size_t queue_depth, int32_t batch_tokens)
    : queue_depth_(queue_depth), engine_(std::move(engine)), batch_tokens_(std::max(1, batch_tokens)) {
  for (int32_t i = 0; i < engine_->sequences(); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->sequence = i;
  }
  placement_ = engine_->model_info().placement;
  PublishHealth();
  last_progress_ms_ = NowMs();
  thread_ = std::thread([this] { Run(); });
}

EngineWorker::~EngineWorker() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

Status EngineWorker::Submit(Job job) {
  if (memory_guard_ != nullptr) LLMD_RETURN_IF_ERROR(memory_guard_->Check());
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return UnavailableError("the daemon is shutting down");
  if (queue_.size() >= queue_depth_) {
    return ResourceExhaustedError("the request queue is full (" + std::to_string(queue_depth_) +
                                  " waiting); retry later");
  }
  job.options.cancel = job.channel->cancel_flag();
  job.submitted_ms = NowMs();
  queue_.push_back(std::move(job));
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
    dropped.swap(queue_);
    for (auto& ch : running_) ch->Cancel();
    cv_.notify_one();
  }
  for (auto& job : dropped) {
    job.channel->Push({JobEvent::Type::kError, {}, {}, UnavailableError("the daemon is shutting down")});
  }
}

std::vector<engine::DevicePlacement> EngineWorker::placement() const {
  std::lock_guard<std::mutex> lock(mu_);
  return placement_;
}

HealthSnapshot EngineWorker::health() const {
  return {model_loaded_.load(), device_index_.load(), kv_usage_.load(), fingerprint_.load(), vocab_size_.load()};
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
  size_t used = 0;
  for (const auto& s : slots_) used += s->resident.size();
  const double cells = static_cast<double>(info.context_tokens) * std::max<size_t>(1, slots_.size());
  kv_usage_ = static_cast<float>(used / cells);
}

bool EngineWorker::AnyBusy() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
}

void EngineWorker::Run() {
  while (true) {
    std::vector<Job> admitted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const size_t busy = std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->busy; });
      if (busy > 0) {
        busy_peak_ = std::max(busy_peak_, busy);
      } else if (busy_peak_ > 0) {  // a busy period just ended
        last_peak_ = std::exchange(busy_peak_, 0);
      }
      // Idle: wake now and then so the watchdog sees a live thread.
      while (!stopping_ && queue_.empty() && !pending_ && !AnyBusy()) {
        cv_.wait_for(lock, std::chrono::milliseconds(idle_wake_ms_.load()));
        last_progress_ms_ = NowMs();
      }
      // Waking from idle after serving several requests at once: those clients tend to send
      // their next requests together, a few ms apart. Let them arrive so they share the first
      // prefill step instead of the late ones queueing behind an early one's whole prompt
      // (the tail TTFT of such a burst). A lone client (the last busy period served one
      // request at a time) never waits.
      // The window ends early only when every slot has a request: the last period's peak
      // undercounts the clients (a burst is itself split over steps), so it is no guide.
      if (busy == 0 && last_peak_ >= 2 && !queue_.empty() && !stopping_) {
        cv_.wait_for(lock, kAdmitWindow, [&] { return stopping_ || queue_.size() >= slots_.size(); });
      }
      if (stopping_ && !AnyBusy()) return;
      // A new engine is swapped in between jobs: hold admissions until the slots drain.
      if (pending_ && !AnyBusy()) {
        engine_ = std::move(pending_);  // the old engine is released here
        placement_ = engine_->model_info().placement;
        for (auto& s : slots_) s->resident.clear();
        PublishHealth();
      }
      size_t free_slots = std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
      while (!pending_ && !stopping_ && free_slots > 0 && !queue_.empty()) {
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
        running_.push_back(admitted.back().channel);
        --free_slots;
      }
    }
    for (auto& job : admitted) Admit(std::move(job));
    if (Step()) last_progress_ms_ = NowMs();
    PublishHealth();
  }
}

Status EngineWorker::EndSession(const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.erase(session) == 0) return NotFoundError("no chat session '" + session + "'");
  return Status::Ok();
}

Result<std::pair<std::string, std::vector<engine::TokenId>>> EngineWorker::GetSession(
    const std::string& session) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return NotFoundError("no chat session '" + session + "'");
  return std::make_pair(it->second.system, it->second.tokens);
}

void EngineWorker::PutSession(const std::string& session, std::string system, std::vector<engine::TokenId> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  Session& s = sessions_[session];
  s.system = std::move(system);
  s.tokens = std::move(tokens);
  s.last_used = 0;  // restored, not yet used: first to go if memory is short
}

WorkerStats EngineWorker::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  WorkerStats s;
  s.requests = finished_;
  s.generated_tokens = generated_;
  std::vector<double> sorted(ttfts_.begin(), ttfts_.end());
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) { return sorted.empty() ? 0.0 : sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))]; };
  s.ttft_p50_ms = pct(0.5);
  s.ttft_p95_ms = pct(0.95);
  s.prefill_tokens_per_second = prefill_ms_ > 0 ? prefilled_ * 1000.0 / prefill_ms_ : 0;
  s.decode_tokens_per_second = decode_ms_ > 0 ? decoded_ * 1000.0 / decode_ms_ : 0;
  s.cached_token_ratio = prompt_tokens_ > 0 ? static_cast<double>(cached_tokens_) / prompt_tokens_ : 0;
  s.active = static_cast<uint32_t>(running_.size());
  s.queued = static_cast<uint32_t>(queue_.size());
  s.sessions = static_cast<uint32_t>(sessions_.size());
  return s;
}

void EngineWorker::RecordFinished(const engine::GenerationStats& st) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_;
  generated_ += st.generated_tokens;
  metrics_.prompt_tokens += st.prompt_tokens;
  metrics_.cached_tokens += st.cached_tokens;
  metrics_.generated_tokens += st.generated_tokens;
  prompt_tokens_ += st.prompt_tokens;
  cached_tokens_ += st.cached_tokens;
  if (st.generated_tokens > 0) {
    prefilled_ += st.prompt_tokens - st.cached_tokens;
    prefill_ms_ += st.prefill_ms;
    decoded_ += st.generated_tokens - 1;
    decode_ms_ += st.decode_ms;
    ttfts_.push_back(st.ttft_ms);
    if (ttfts_.size() > 1000) ttfts_.pop_front();
  }
}

void EngineWorker::Admit(Job job) {
  Result<std::vector<engine::TokenId>> prompt = InvalidArgumentError("unset");
  if (job.raw) {
    prompt = engine_->CompletionPrompt(job.user);
  } else if (!job.messages.empty()) {
    prompt = engine_->ConversationPrompt(job.messages, job.enable_thinking, job.sanitize);
  } else if (job.session.empty()) {
    prompt = engine_->ChatPrompt(job.system, job.user, job.sanitize);
  } else {
    // A chat turn: the session's exact tokens, then this turn's text, so the cache of the
    // previous turn is reused as it is.
    std::vector<engine::TokenId> history;
    std::string system = job.system;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = sessions_.find(job.session); it != sessions_.end()) {
        history = it->second.tokens;
        system = it->second.system;
      }
    }
    auto turn = history.empty() ? engine_->ChatPrompt(system, job.user, job.sanitize)
                                : engine_->NextTurnPrompt(system, job.user, job.sanitize);
    if (turn.has_value()) {
      history.insert(history.end(), turn->begin(), turn->end());
      prompt = std::move(history);
      job.system = system;
    } else {
      prompt = turn.error();
    }
  }
  Status error = prompt.has_value() ? job.options.sampling.Validate() : prompt.error();
  if (error.ok() && job.options.max_tokens < 0) error = InvalidArgumentError("max_tokens must be >= 0");
  const int64_t n_ctx = engine_->model_info().context_tokens;
  if (error.ok() && static_cast<int64_t>(prompt->size()) >= n_ctx) {
    error = InvalidArgumentError("prompt too long (" + std::to_string(prompt->size()) +
                                 " tokens >= context of " + std::to_string(n_ctx) + ")");
  }
  std::unique_ptr<engine::Sampler> sampler;
  if (error.ok()) {
    auto s = engine_->NewSampler(job.options.sampling);
    if (s.has_value()) sampler = std::move(*s);
    else error = s.error();
  }
  if (!error.ok()) {
    job.channel->Push({JobEvent::Type::kError, {}, {}, error});
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(running_, job.channel);
    return;
  }

  // The free slot whose cache shares the longest prefix with this prompt; else the least
  // recently used one.
  Slot* best = nullptr;
  size_t best_common = 0;
  for (auto& s : slots_) {
    if (s->busy) continue;
    size_t common = std::mismatch(s->resident.begin(), s->resident.end(), prompt->begin(), prompt->end()).first -
                    s->resident.begin();
    if (best == nullptr || common > best_common || (common == best_common && s->last_used < best->last_used)) {
      best = s.get();
      best_common = common;
    }
  }
  Slot& slot = *best;
  // At least the last prompt token is decoded anew, for its logits.
  size_t keep = std::min(best_common, prompt->size() - 1);
  engine_->TruncateSequence(slot.sequence, static_cast<int32_t>(keep));
  slot.resident.resize(keep);

  slot.busy = true;
  slot.last_used = ++use_counter_;
  slot.prompt = std::move(*prompt);
  slot.prefilled = keep;
  slot.sampler = std::move(sampler);
  slot.budget = std::min<int64_t>(job.options.max_tokens, n_ctx - static_cast<int64_t>(slot.prompt.size()));
  slot.has_pending = false;
  slot.utf8 = Utf8StreamAssembler();
  slot.think = chat::ThinkStripper();
  slot.stops = chat::StopStrings(job.stop);
  slot.out = engine::Completion();
  slot.out.stats.prompt_tokens = static_cast<int32_t>(slot.prompt.size());
  slot.out.stats.cached_tokens = static_cast<int32_t>(keep);
  slot.prefill_start_ms = 0;
  slot.job = std::move(job);
  if (slot.budget <= 0) Finish(slot, engine::FinishReason::kLength);
}

bool EngineWorker::Step() {
  // Cancelled jobs end before any more work is spent on them.
  for (auto& s : slots_) {
    if (s->busy && s->job.channel->cancel_flag()->load()) Finish(*s, engine::FinishReason::kCancelled);
  }
  std::vector<engine::DecodeItem> batch;
  std::vector<std::pair<Slot*, int32_t>> outputs;  // slot, its logits' index in the batch
  // Generating slots first: one token each, so streams keep flowing.
  for (auto& s : slots_) {
    if (!s->busy || !s->has_pending) continue;
    outputs.emplace_back(s.get(), static_cast<int32_t>(batch.size()));
    batch.push_back({s->sequence, static_cast<int32_t>(s->resident.size()), s->pending, true});
  }
  // Then prompt chunks, within the step's token budget.
  for (auto& s : slots_) {
    if (!s->busy || s->has_pending || s->prefilled >= s->prompt.size()) continue;
    int64_t room = batch_tokens_ - static_cast<int64_t>(batch.size());
    if (room <= 0) break;
    if (s->prefill_start_ms == 0) s->prefill_start_ms = NowMs();
    size_t n = std::min<size_t>(room, s->prompt.size() - s->prefilled);
    for (size_t i = 0; i < n; ++i) {
      size_t at = s->prefilled + i;
      bool last = at + 1 == s->prompt.size();
      if (last) outputs.emplace_back(s.get(), static_cast<int32_t>(batch.size()));
      batch.push_back({s->sequence, static_cast<int32_t>(at), s->prompt[at], last});
    }
  }
  if (batch.empty()) return false;

  Status st = engine_->DecodeBatch(batch);
  if (!st.ok()) {
    for (auto& s : slots_) {
      if (s->busy) Fail(*s, st);
    }
    return true;
  }
  // Record what is now in each sequence's cache.
  for (const auto& item : batch) {
    Slot& s = *slots_[item.sequence];
    s.resident.push_back(item.token);
    if (!s.has_pending) s.prefilled = std::max(s.prefilled, static_cast<size_t>(item.position) + 1);
  }
  // Published before any token of this step is: a client that has seen a token sees a health
  // report that includes it.
  PublishHealth();
  for (auto& [slot, index] : outputs) {
    if (!slot->has_pending) slot->prefill_end_ms = static_cast<double>(NowMs());
    slot->has_pending = false;
    Sample(*slot, index);
  }
  return true;
}

void EngineWorker::Sample(Slot& slot, int32_t output_index) {
  engine::GenerationStats& st = slot.out.stats;
  engine::TokenId token = slot.sampler->Sample(output_index);
  const int64_t now = NowMs();
  const auto now_precise = std::chrono::steady_clock::now();
  if (st.generated_tokens == 0 && slot.first_token_ms == 0) {
    slot.first_token_ms = now;
    st.ttft_ms = static_cast<double>(now - slot.job.submitted_ms);
    st.prefill_ms = slot.prefill_end_ms - static_cast<double>(slot.prefill_start_ms);
    metrics_.ttft_seconds.Observe(st.ttft_ms / 1000.0);
  } else {
    metrics_.inter_token_seconds.Observe(std::chrono::duration<double>(now_precise - slot.last_token).count());
  }
  slot.last_token = now_precise;
  if (engine_->IsEndOfGeneration(token)) {
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  slot.out.tokens.push_back(token);
  ++st.generated_tokens;
  std::string text = slot.utf8.Push(engine_->TokenText(token));
  if (slot.job.options.strip_think) text = slot.think.Push(text);
  text = slot.stops.Push(text);
  if (!text.empty()) {
    slot.out.text += text;
    if (slot.job.stream) slot.job.channel->Push({JobEvent::Type::kText, text, {}, {}});
  }
  if (slot.stops.stopped()) {
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  if (--slot.budget <= 0) {
    Finish(slot, engine::FinishReason::kLength);
    return;
  }
  slot.pending = token;
  slot.has_pending = true;
}

void EngineWorker::Finish(Slot& slot, engine::FinishReason reason) {
  engine::GenerationStats& st = slot.out.stats;
  st.finish_reason = reason;
  if (slot.first_token_ms != 0) st.decode_ms = static_cast<double>(NowMs() - slot.first_token_ms);
  std::string tail = slot.utf8.Finish();
  if (slot.job.options.strip_think) tail = slot.think.Push(tail) + slot.think.Finish();
  tail = slot.stops.Push(tail);
  tail += slot.stops.Finish();
  if (!tail.empty()) {
    slot.out.text += tail;
    if (slot.job.stream) slot.job.channel->Push({JobEvent::Type::kText, tail, {}, {}});
  }
  RecordFinished(st);
  if (!slot.job.session.empty()) {
    // The turn joins the session's history: exactly the tokens fed and generated.
    std::lock_guard<std::mutex> lock(mu_);
    Session& session = sessions_[slot.job.session];
    session.system = slot.job.system;
    session.tokens = slot.prompt;
    session.tokens.insert(session.tokens.end(), slot.out.tokens.begin(), slot.out.tokens.end());
    session.last_used = ++use_counter_;
    while (sessions_.size() > max_sessions_) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
        return a.second.last_used < b.second.last_used;
      });
      sessions_.erase(oldest);
    }
  }
  slot.job.channel->Push({JobEvent::Type::kDone, {}, std::move(slot.out), {}});
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(running_, slot.job.channel);
  }
  slot.busy = false;
  slot.has_pending = false;
  slot.first_token_ms = 0;
  slot.sampler.reset();
  slot.job = Job();
}

void EngineWorker::Fail(Slot& slot, const Status& status) {
  slot.job.channel->Push({JobEvent::Type::kError, {}, {}, status});
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(running_, slot.job.channel);
  }
  // The cache state of a failed step is unknown: start this sequence over next time.
  engine_->TruncateSequence(slot.sequence, 0);
  slot.resident.clear();
  slot.busy = false;
  slot.has_pending = false;
  slot.first_token_ms = 0;
  slot.sampler.reset();
  slot.job = Job();
}

}  // namespace llmd::sched
