#include "llmd/engine.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <system_error>

#include "engine/llama/llama_engine.h"
#include "sched/engine_worker.h"
#include "sched/job_waiter.h"
#include "sched/memory_guard.h"
#include "sched/warm_up.h"

namespace llmd {

LocalGenerateOptions LocalGenerateOptions::Greedy(int32_t max_tokens) {
  LocalGenerateOptions o;
  o.max_tokens = max_tokens;
  o.temperature = 0.0f;
  o.top_p = 1.0f;
  o.top_k = 1;
  o.repeat_penalty = 1.0f;
  return o;
}

struct LocalEngine::Impl {
  LocalEngineOptions options;
  double load_ms = 0;
  // Generations hold it shared; Reset and Release exclusively, so they wait for those.
  mutable std::shared_mutex mu;
  std::unique_ptr<sched::EngineWorker> worker;  // guarded by mu; null once released
  mutable std::mutex stats_mu;
  LocalStats last;                              // guarded by stats_mu
  std::atomic<uint64_t> next_chat{0};
  std::atomic<uint64_t> epoch{0};               // Reset count: chats compare it to start over

  static sched::WorkerOptions WorkerOptionsFor(const LocalEngineOptions& options) {
    sched::WorkerOptions w;
    w.decode_width = static_cast<size_t>(options.sequences);  // the reserved ones are for a higher class
    w.queue_depth = 1024;        // in-process callers wait their turn rather than being refused
    w.max_sessions = 1u << 20;   // the app owns its chats; none is dropped behind its back
    return w;
  }

  // Runs one job to its end; `stats` (if not null) gets its stats.
  Result<std::string> Run(sched::Job job, const LocalGenerateOptions& o, const TextCallback& on_text,
                          LocalStats* stats = nullptr) {
    engine::SamplingParams& p = job.options.sampling;
    p.temperature = o.temperature;
    p.top_p = o.top_p;
    p.top_k = o.top_k;
    p.repeat_penalty = o.repeat_penalty;
    p.seed = o.seed;
    job.options.max_tokens = o.max_tokens;
    job.stop = o.stop;
    job.sanitize = options.sanitize;
    job.stream = static_cast<bool>(on_text);
    job.request_class = static_cast<RequestClass>(o.request_class);  // the same values
    if (o.first_token_deadline_ms > 0) job.first_token_deadline_ms = o.first_token_deadline_ms;
    if (o.overflow == LocalOverflow::kDropOldest) job.overflow = engine::ContextOverflow::kDropOldest;
    auto channel = job.channel;
    std::shared_lock<std::shared_mutex> lock(mu);
    if (!worker) return UnavailableError("the engine was released");
    LLMD_RETURN_IF_ERROR(worker->Submit(std::move(job)));
    std::string forwarded;  // what the callback was given, when it stopped the generation
    sched::WaitOptions wait;
    // A callback that says stop cancels at the next step; the text so far is kept, and the
    // waiter drains the job to its end for its stats (an app wants them; nothing is stuck).
    wait.drain_limit_ms = sched::WaitOptions::kDrainUntilEnd;
    if (on_text) {
      wait.on_text = [&](const sched::JobEvent& event) {
        forwarded += event.text;
        return on_text(event.text);
      };
    }
    sched::WaitResult result = sched::JobWaiter().Wait(*channel, wait);
    if (!result.error.ok()) return result.error;
    if (result.ended) {
      const LocalStats st = Record(result.completion.stats);
      if (stats != nullptr) *stats = st;
    }
    if (result.end == sched::WaitEnd::kStopped) return forwarded;
    return std::move(result.completion.text);
  }

  LocalStats Record(const engine::GenerationStats& st) {
    std::lock_guard<std::mutex> lock(stats_mu);
    last = {load_ms, st.prefill_ms, st.ttft_ms, st.decode_ms, st.prompt_tokens, st.cached_tokens,
            st.generated_tokens, std::string(engine::FinishReasonName(st.finish_reason)), st.dropped_tokens,
            st.dropped_turns};
    return last;
  }
};

LocalEngine::LocalEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalEngine::~LocalEngine() { Release(); }

Result<std::unique_ptr<LocalEngine>> LocalEngine::Load(const std::string& path, int32_t context_tokens,
                                                       int32_t threads) {
  LocalEngineOptions o;
  o.context_tokens = context_tokens;
  o.threads = threads;
  return Load(path, o);
}

namespace {

// An automatic pool's share of the memory: what is available now less the model file and a
// margin (llama.cpp's 1 GiB, a quarter of less), as the daemon reckons it.
uint64_t AutomaticKvBudget(const std::string& path) {
  const uint64_t available = sched::AvailableMemoryBytes().value_or(0);
  std::error_code ec;
  const uint64_t file = std::filesystem::file_size(path, ec);
  const uint64_t used = (ec ? 0 : file) + std::min<uint64_t>(uint64_t{1} << 30, available / 4);
  return available > used ? available - used : 1;  // 1: the smallest pool
}

}  // namespace

Result<std::unique_ptr<LocalEngine>> LocalEngine::Load(const std::string& path, const LocalEngineOptions& options) {
  engine::EngineConfig config;
  config.model_path = path;
  if (options.context_tokens < 0) return InvalidArgumentError("context_tokens must be >= 0 (0: automatic)");
  config.context_tokens = options.context_tokens;
  config.kv_budget_bytes = AutomaticKvBudget(path);
  if (options.sequences < 1 || options.reserved_sequences < 0) {
    return InvalidArgumentError("sequences must be >= 1 and reserved_sequences >= 0");
  }
  config.sequences = options.sequences + options.reserved_sequences;
  config.threads = options.threads;
  config.gpu_layers = options.gpu_layers;
  auto engine = engine::NewLlamaEngine();
  LLMD_RETURN_IF_ERROR(engine->Load(config));
  const double load_ms = engine->model_info().load_ms;
  LLMD_ASSIGN_OR_RETURN(engine, sched::WarmUp(std::move(engine), ""));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->load_ms = load_ms;
  impl->last.load_ms = load_ms;
  impl->worker = std::make_unique<sched::EngineWorker>(std::move(engine), Impl::WorkerOptionsFor(options));
  return std::unique_ptr<LocalEngine>(new LocalEngine(std::move(impl)));
}

Result<std::string> LocalEngine::Generate(std::string_view system, std::string_view user, int32_t max_tokens) {
  LocalGenerateOptions o;
  o.max_tokens = max_tokens;
  return Generate(system, user, o);
}

Result<std::string> LocalEngine::Generate(std::string_view system, std::string_view user,
                                          const LocalGenerateOptions& options) {
  return GenerateStream(system, user, options, {});
}

Result<std::string> LocalEngine::GenerateStream(std::string_view system, std::string_view user,
                                                const LocalGenerateOptions& options, const TextCallback& on_text) {
  sched::Job job;
  job.prompt = sched::OneShotChat{std::string(system), std::string(user)};
  return impl_->Run(std::move(job), options, on_text);
}

Result<std::string> LocalEngine::Complete(std::string_view prompt, const LocalGenerateOptions& options,
                                          const TextCallback& on_text) {
  sched::Job job;
  job.prompt = sched::RawCompletion{std::string(prompt)};
  return impl_->Run(std::move(job), options, on_text);
}

Result<std::unique_ptr<LocalChat>> LocalEngine::NewChat(std::string_view system) {
  {
    std::shared_lock<std::shared_mutex> lock(impl_->mu);
    if (!impl_->worker) return UnavailableError("the engine was released");
  }
  const std::string session = "local-chat-" + std::to_string(++impl_->next_chat);
  return std::unique_ptr<LocalChat>(new LocalChat(*impl_, std::string(system), session));
}

LocalStats LocalEngine::last_stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mu);
  return impl_->last;
}

void LocalEngine::Reset() {
  std::unique_lock<std::shared_mutex> lock(impl_->mu);
  if (!impl_->worker) return;
  // A fresh worker over the same engine starts with empty memory and no sessions.
  auto engine = impl_->worker->Release();
  impl_->worker = std::make_unique<sched::EngineWorker>(std::move(engine), Impl::WorkerOptionsFor(impl_->options));
  ++impl_->epoch;
}

void LocalEngine::Release() {
  if (!impl_) return;
  {
    // Cancel first, so the exclusive lock below is not held up by long generations.
    std::shared_lock<std::shared_mutex> lock(impl_->mu);
    if (impl_->worker) impl_->worker->Stop();
  }
  std::unique_lock<std::shared_mutex> lock(impl_->mu);
  impl_->worker.reset();  // joins the thread, then frees the model
}

LocalChat::LocalChat(LocalEngine::Impl& engine, std::string system, std::string session)
    : engine_(engine), system_(std::move(system)), session_(std::move(session)), epoch_(engine.epoch.load()) {}

LocalChat::~LocalChat() { Clear(); }

Result<std::string> LocalChat::Ask(std::string_view user, int32_t max_tokens) {
  LocalGenerateOptions o;
  o.max_tokens = max_tokens;
  return Ask(user, o);
}

Result<std::string> LocalChat::Ask(std::string_view user, const LocalGenerateOptions& options,
                                   const TextCallback& on_text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch_ != engine_.epoch.load()) {  // the engine was Reset: the history is gone
    epoch_ = engine_.epoch.load();
    turns_ = 0;
  }
  sched::Job job;
  job.prompt = sched::SessionTurn{session_, system_, std::string(user)};
  auto reply = engine_.Run(std::move(job), options, on_text, &last_);
  if (reply.has_value()) ++turns_;
  return reply;
}

void LocalChat::Clear() {
  std::lock_guard<std::mutex> chat_lock(mu_);
  std::shared_lock<std::shared_mutex> lock(engine_.mu);
  if (engine_.worker) (void)engine_.worker->EndSession(session_);
  turns_ = 0;
}

int32_t LocalChat::turns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_ == engine_.epoch.load() ? turns_ : 0;
}

LocalStats LocalChat::last_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

}  // namespace llmd
