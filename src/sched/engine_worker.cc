#include "sched/engine_worker.h"

#include <algorithm>
#include <map>
#include <type_traits>
#include <utility>

#if defined(__GLIBC__)  // defined by the headers above
#include <malloc.h>
#endif

#include "chat/stop_strings.h"
#include "chat/think_stripper.h"
#include "common/log.h"
#include "common/utf8.h"
#include "sched/decode_calls.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

EngineWorker::EngineWorker(std::unique_ptr<engine::Engine> engine, WorkerOptions options)
    : options_(options),
      clock_(*options_.clock),
      engine_(std::move(engine)),
      checkpoints_(options_.checkpoint_budget_bytes) {
  for (int32_t i = 0; i < engine_->sequences(); ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->sequence = i;
  }
  ClearMemory();
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
  if (queue_.size() >= options_.queue_depth) {
    return ResourceExhaustedError("the request queue is full (" + std::to_string(options_.queue_depth) +
                                  " waiting); retry later")
        .WithReason(ErrorReason::kQueueFull);
  }
  job.submitted_ms = clock_.NowMs();
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
  for (auto& job : dropped) job.channel->Push(JobEvent::Error(ShuttingDownError()));
}

std::unique_ptr<engine::Engine> EngineWorker::Release() {
  Stop();
  if (thread_.joinable()) thread_.join();
  return std::move(engine_);
}

Result<std::vector<engine::TokenId>> EngineWorker::Tokenize(std::string_view text, bool add_special,
                                                            bool parse_special) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || engine_ == nullptr) return ShuttingDownError();
  return engine_->Tokenize(text, add_special, parse_special);
}

Result<std::string> EngineWorker::Detokenize(const std::vector<engine::TokenId>& tokens, bool render_special) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_ || engine_ == nullptr) return ShuttingDownError();
  return engine_->Detokenize(tokens, render_special);
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
  const engine::MemoryUse memory = engine_->memory_use();
  std::lock_guard<std::mutex> lock(mu_);
  memory_ = memory;
}

// The worker owns what the sequences hold: an engine it takes (warmed up, swapped in) starts
// empty, so the slots' bookkeeping matches the memory.
void EngineWorker::ClearMemory() {
  for (auto& s : slots_) {
    s->resident.clear();
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

void EngineWorker::ReleaseWhenIdleLongEnough() {
  if (release_after_ms_ < 0 || !engine_ || !memory_.working_memory) return;
  if (clock_.NowMs() - idle_since_ms_ < release_after_ms_) return;
  const engine::MemoryUse before = engine_->memory_use();
  ClearMemory();  // the slots' bookkeeping and the checkpoints go with the memory
  engine_->ReleaseWorkingMemory();
#if defined(__GLIBC__)
  // The freed checkpoints (heap strings of a few MiB each) stay in glibc's arenas otherwise:
  // measured 186 MiB kept on the hybrid 0.8B shape after a release.
  malloc_trim(0);
#endif
  memory_ = engine_->memory_use();
  ++releases_;
  Log(LogLevel::kInfo, "working_memory_released",
      {{"model", engine_->model_info().description},
       {"idle_ms", std::to_string(clock_.NowMs() - idle_since_ms_)},
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
    if (Step()) last_progress_ms_ = clock_.NowMs();
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
    ReleaseWhenIdleLongEnough();
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
    while (!stopping_ && queue_.size() < slots_.size() && clock_.NowMs() < end) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
  // A new engine is swapped in between jobs: hold admissions until the slots drain.
  if (pending_ && !AnyBusy()) {
    engine_ = std::move(pending_);  // the old engine is released here
    placement_ = engine_->model_info().placement;
    draft_governor_ = DraftGovernor();  // what drafts cost was the old engine's
    // One slot per sequence of the new engine: a reload may change their number.
    slots_.clear();
    for (int32_t i = 0; i < engine_->sequences(); ++i) {
      slots_.push_back(std::make_unique<Slot>());
      slots_.back()->sequence = i;
    }
    ClearMemory();
    StartIdleTime(std::nullopt);
    lock.unlock();  // PublishHealth takes mu_
    PublishHealth();
    lock.lock();
  }
  std::vector<Job> admitted;
  size_t free_slots = std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->busy; });
  while (!pending_ && !stopping_ && free_slots > 0 && !queue_.empty()) {
    admitted.push_back(std::move(queue_.front()));
    queue_.pop_front();
    running_.push_back(admitted.back().channel);
    --free_slots;
  }
  return admitted;
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
  s.active = static_cast<uint32_t>(running_.size());
  s.queued = static_cast<uint32_t>(queue_.size());
  s.sessions = static_cast<uint32_t>(sessions_.size());
  s.steps = steps_.load();
  s.prefix_copies = prefix_copies_.load();
  s.checkpoints = checkpoints_.count();
  s.checkpoint_bytes = checkpoints_.bytes();
  s.checkpoint_hits = checkpoints_.hits();
  s.checkpoint_misses = checkpoints_.misses();
  s.memory = memory_;
  s.working_memory_releases = releases_;
  return s;
}

void EngineWorker::RecordFinished(const engine::GenerationStats& st) {
  metrics_.prompt_tokens += st.prompt_tokens;
  metrics_.cached_tokens += st.cached_tokens;
  metrics_.generated_tokens += st.generated_tokens;
  metrics_.draft_tokens += static_cast<uint64_t>(st.draft_tokens);
  metrics_.accepted_draft_tokens += static_cast<uint64_t>(st.accepted_draft_tokens);
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_;
  if (st.generated_tokens > 0) {
    prefilled_ += st.prompt_tokens - st.cached_tokens;
    prefill_ms_ += st.prefill_ms;
    decoded_ += st.generated_tokens - 1;
    decode_ms_ += st.decode_ms;
    ttfts_.push_back(st.ttft_ms);
    if (ttfts_.size() > 1000) ttfts_.pop_front();
  }
}

Result<engine::ChatPlan> EngineWorker::BuildPrompt(Job& job) {
  const bool sanitize = job.sanitize;
  auto tokens_only = [](Result<std::vector<engine::TokenId>> prompt) -> Result<engine::ChatPlan> {
    if (!prompt.has_value()) return prompt.error();
    engine::ChatPlan plan;
    plan.prompt = std::move(*prompt);
    return plan;
  };
  return std::visit(
      [&](auto& p) -> Result<engine::ChatPlan> {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, OneShotChat>) {
          return tokens_only(engine_->ChatPrompt(p.system, p.user, sanitize));
        } else if constexpr (std::is_same_v<T, Conversation>) {
          return engine_->ConversationPrompt(p.messages, p.format, sanitize);
        } else if constexpr (std::is_same_v<T, RawCompletion>) {
          return tokens_only(engine_->CompletionPrompt(p.prompt));
        } else if constexpr (std::is_same_v<T, EmbeddingInputs>) {
          return InternalError("an embedding job has no prompt");  // RunEmbeddings takes it
        } else {
          // A chat turn: the session's exact tokens, then this turn's text, so the memory of
          // the previous turn is reused as it is.
          std::vector<engine::TokenId> history;
          std::string system = p.system;
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (auto it = sessions_.find(p.session); it != sessions_.end()) {
              history = it->second.tokens;
              system = it->second.system;
            }
          }
          LLMD_ASSIGN_OR_RETURN(auto turn, history.empty() ? engine_->ChatPrompt(system, p.user, sanitize)
                                                           : engine_->NextTurnPrompt(system, p.user, sanitize));
          history.insert(history.end(), turn.begin(), turn.end());
          p.system = std::move(system);
          return tokens_only(std::move(history));
        }
      },
      job.prompt);
}

namespace {

// A chat plan's constraints join the job's: its grammar (a request's own grammar cannot be
// combined with it), its stop strings, and its parser, which then handles the think block.
Status ApplyChatPlan(engine::ChatPlan& plan, Job& job) {
  engine::SamplingParams& p = job.options.sampling;
  if (!plan.grammar.empty()) {
    if (!p.grammar.empty()) return InvalidArgumentError("a grammar cannot be combined with tools or a JSON schema");
    p.grammar = std::move(plan.grammar);
    p.grammar_lazy = plan.grammar_lazy;
    p.grammar_trigger_patterns = std::move(plan.grammar_trigger_patterns);
    p.grammar_trigger_tokens = std::move(plan.grammar_trigger_tokens);
    p.grammar_prefill = std::move(plan.grammar_prefill);
  }
  for (auto& stop : plan.stops) job.stop.push_back(std::move(stop));
  if (plan.parser) job.options.strip_think = false;
  return Status::Ok();
}

}  // namespace

// Embeds every input in turn on the engine thread (between decode steps) and answers at once.
void EngineWorker::RunEmbeddings(Job& job) {
  const auto& inputs = std::get<EmbeddingInputs>(job.prompt);
  engine::Completion done;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < inputs.texts.size(); ++i) {
    Result<std::vector<float>> vector = [&]() -> Result<std::vector<float>> {
      LLMD_ASSIGN_OR_RETURN(auto tokens, engine_->CompletionPrompt(inputs.texts[i]));
      done.stats.prompt_tokens += static_cast<int32_t>(tokens.size());
      return engine_->Embed(tokens);
    }();
    if (!vector.has_value()) {
      job.channel->Push(JobEvent::Error(
          Status(vector.error().code(), "input " + std::to_string(i) + ": " + vector.error().message())
              .WithReason(vector.error().reason())));
      return;
    }
    done.embeddings.push_back(std::move(*vector));
  }
  done.stats.prefill_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  job.channel->Push(JobEvent::Done(std::move(done)));
}

void EngineWorker::Admit(Job job) {
  const bool embedding_job = std::holds_alternative<EmbeddingInputs>(job.prompt);
  if (embedding_job || engine_->model_info().embeddings) {
    if (embedding_job && engine_->model_info().embeddings) {
      RunEmbeddings(job);
    } else {
      job.channel->Push(JobEvent::Error(InvalidArgumentError(
          embedding_job ? "this model is loaded for generation; name it in embedding_models to embed with it"
                        : "this model is loaded for embeddings; it does not generate text")));
    }
    std::lock_guard<std::mutex> lock(mu_);
    StartIdleTime(job.keep_alive_ms);
    std::erase(running_, job.channel);
    return;
  }
  auto chat_plan = BuildPrompt(job);
  Status error = chat_plan.has_value() ? ApplyChatPlan(*chat_plan, job) : chat_plan.error();
  if (error.ok()) error = job.options.sampling.Validate();
  std::vector<engine::TokenId>* prompt = chat_plan.has_value() ? &chat_plan->prompt : nullptr;
  if (error.ok() && prompt->empty()) error = InvalidArgumentError("prompt is empty");
  if (error.ok() && job.options.max_tokens < 0) error = InvalidArgumentError("max_tokens must be >= 0");
  const int64_t n_ctx = engine_->model_info().context_tokens;
  if (error.ok() && static_cast<int64_t>(prompt->size()) >= n_ctx) {
    error = InvalidArgumentError("prompt too long (" + std::to_string(prompt->size()) + " tokens >= context of " +
                                 std::to_string(n_ctx) + ")")
                .WithReason(ErrorReason::kPromptTooLong);
  }
  if (error.ok() && job.count_only) {
    engine::Completion counted;
    counted.stats.prompt_tokens = static_cast<int32_t>(prompt->size());
    job.channel->Push(JobEvent::Done(std::move(counted)));
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(running_, job.channel);
    return;
  }
  std::unique_ptr<engine::Sampler> sampler;
  if (error.ok()) {
    auto s = engine_->NewSampler(job.options.sampling, *prompt);
    if (s.has_value()) sampler = std::move(*s);
    else error = s.error();
  }
  if (!error.ok()) {
    job.channel->Push(JobEvent::Error(error));
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(running_, job.channel);
    return;
  }

  std::vector<size_t> cuts = PromptCuts(*prompt);
  const ReusePlan plan = PlanReuse(*prompt, ShapeMatters() ? &cuts : nullptr);
  Slot& slot = *plan.target;
  const size_t keep = ApplyReuse(plan);
  slot.busy = true;
  slot.job_id = static_cast<uint64_t>(++use_counter_);
  slot.last_used = use_counter_;
  slot.prompt = std::move(*prompt);
  slot.cuts = std::move(cuts);
  slot.prefilled = keep;
  slot.sampler = std::move(sampler);
  slot.budget = std::min<int64_t>(job.options.max_tokens, n_ctx - static_cast<int64_t>(slot.prompt.size()));
  slot.stops = chat::StopStrings(job.stop);
  slot.out.parser = std::move(chat_plan->parser);
  slot.out.stats.prompt_tokens = static_cast<int32_t>(slot.prompt.size());
  slot.out.stats.cached_tokens = static_cast<int32_t>(keep);
  if (auto* turn = std::get_if<SessionTurn>(&job.prompt)) slot.session_system = turn->system;
  slot.job = std::move(job);
  if (slot.budget <= 0) {
    Finish(slot, engine::FinishReason::kLength);
    return;
  }
  if (engine_->model_info().speculative.draft_max > 0 && slot.job.options.draft_max != 0) {
    engine_->BeginDraft(slot.sequence, slot.prompt);
  }
  PlanCheckpoints(slot);
  WaitForSharedPrefix(slot);
}

bool EngineWorker::Step() {
  // Cancelled jobs end before any more work is spent on them.
  for (auto& s : slots_) {
    if (s->busy && s->job.channel->cancelled()) Finish(*s, engine::FinishReason::kCancelled);
  }
  ResolveSharedPrefixWaits();
  std::vector<engine::DecodeItem> batch;
  // Generating slots first: one token each, so streams keep flowing, and its draft.
  std::vector<Slot*> generating;
  for (auto& s : slots_) {
    if (s->busy && s->has_pending) generating.push_back(s.get());
  }
  const int64_t start_us = clock_.NowUs();
  const uint64_t sampled_before = sampled_tokens_;
  const bool may_draft = engine_->model_info().speculative.draft_max > 0 && !generating.empty() &&
                         draft_governor_.MayDraft(generating.size());
  if (may_draft) DraftFor(generating, options_.batch_tokens - static_cast<int64_t>(generating.size()));
  bool drafted = false;
  for (Slot* s : generating) {
    const auto at = static_cast<int32_t>(s->resident.size());
    batch.push_back({s->sequence, at, s->pending, true});
    drafted = drafted || !s->draft.empty();
    for (size_t i = 0; i < s->draft.size(); ++i) {
      batch.push_back({s->sequence, at + 1 + static_cast<int32_t>(i), s->draft[i], true});
    }
  }
  // Then prompt chunks, within the step's token budget.
  const size_t generated_items = batch.size();
  bool first_chunk = true;
  for (auto& s : slots_) {
    if (static_cast<int64_t>(batch.size()) >= options_.batch_tokens) break;
    if (!s->busy || s->has_pending || s->wait_source != nullptr || s->prefilled >= s->prompt.size()) continue;
    if (AddPromptChunk(*s, &batch, first_chunk)) first_chunk = false;
  }
  if (batch.empty()) return false;
  ++steps_;
  const bool prefilled = batch.size() > generated_items;
  std::vector<std::vector<engine::DecodeItem>> calls;
  if (ShapeMatters()) {
    calls = ShapeStableCalls(batch, static_cast<size_t>(engine_->model_info().memory.decode_shape_tokens));
  } else {
    calls.push_back(std::move(batch));
  }
  bool failed = false;
  for (const auto& call : calls) {
    if (Status st = engine_->DecodeBatch(call); !st.ok()) {
      RecoverFailedStep(call, st);
      failed = true;
      continue;
    }
    AfterDecode(call, OutputsOf(call));
  }
  // A step that also prefilled, or failed, says nothing about what drafts cost.
  if (!prefilled && !failed && !generating.empty()) {
    draft_governor_.OnStep(generating.size(), drafted, clock_.NowUs() - start_us,
                           static_cast<int64_t>(sampled_tokens_ - sampled_before));
  }
  return true;
}

// Adds the slot's next prompt tokens, up to the step's room and ending at the next
// checkpoint, so the state after exactly those tokens can be saved. Where the shape of a
// decode matters, the chunk runs to the next prefill cut, never shorter: the step's first
// chunk goes in whatever the room (it is a decode call of its own), a later one only if it fits.
bool EngineWorker::AddPromptChunk(Slot& slot, std::vector<engine::DecodeItem>* batch, bool first_chunk) {
  const size_t room = static_cast<size_t>(options_.batch_tokens) - batch->size();
  size_t end = std::min(slot.prompt.size(), slot.prefilled + room);
  if (!slot.cuts.empty()) {
    const auto next = std::upper_bound(slot.cuts.begin(), slot.cuts.end(), slot.prefilled);
    end = next == slot.cuts.end() ? slot.prompt.size() : *next;
    if (!first_chunk && end - slot.prefilled > room) return false;
  }
  if (!slot.prefill_started) {
    slot.prefill_started = true;
    slot.prefill_start_ms = clock_.NowMs();
    slot.out.stats.prefill_step = steps_.load() + 1;  // the step about to run
  }
  for (size_t at : slot.checkpoint_at) {
    if (at > slot.prefilled) {
      end = std::min(end, at);
      break;
    }
  }
  for (size_t at = slot.prefilled; at < end; ++at) {
    batch->push_back({slot.sequence, static_cast<int32_t>(at), slot.prompt[at], at + 1 == slot.prompt.size()});
  }
  return true;
}

// Each slot in `items` and the index of its first item with logits: the last prompt token,
// or the pending token with its draft (whose logits follow it) behind.
std::vector<std::pair<EngineWorker::Slot*, int32_t>> EngineWorker::OutputsOf(
    const std::vector<engine::DecodeItem>& items) {
  std::vector<std::pair<Slot*, int32_t>> outputs;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].logits || (i > 0 && items[i - 1].sequence == items[i].sequence && items[i - 1].logits)) continue;
    outputs.emplace_back(slots_[items[i].sequence].get(), static_cast<int32_t>(i));
  }
  return outputs;
}

void EngineWorker::AfterDecode(const std::vector<engine::DecodeItem>& items,
                               const std::vector<std::pair<Slot*, int32_t>>& outputs) {
  // Record what is now in each sequence's memory.
  for (const auto& item : items) {
    Slot& s = *slots_[item.sequence];
    s.resident.push_back(item.token);
    if (!s.has_pending) s.prefilled = std::max(s.prefilled, static_cast<size_t>(item.position) + 1);
  }
  for (auto& s : slots_) {
    if (!s->busy || s->checkpoint_at.empty() || s->checkpoint_at.front() != s->prefilled) continue;
    s->checkpoint_at.erase(s->checkpoint_at.begin());
    auto state = engine_->SaveSequenceState(s->sequence);
    if (state.has_value()) {
      checkpoints_.Put({s->prompt.begin(), s->prompt.begin() + static_cast<ptrdiff_t>(s->prefilled)}, std::move(*state));
    } else {
      Log(LogLevel::kWarn, "checkpoint_failed", {{"error", state.error().ToString()}});
    }
  }
  // Published before any token of this step is: a client that has seen a token sees a health
  // report that includes it.
  PublishHealth();
  for (auto& [slot, index] : outputs) {
    if (!slot->has_pending) slot->prefill_end_ms = clock_.NowMs();
    slot->has_pending = false;
    if (slot->draft.empty()) {
      Sample(*slot, index);
    } else {
      Verify(*slot, index);
    }
  }
}

// A failed step is retried one sequence at a time: the request whose tokens the engine
// refuses fails alone, with the engine's error, and every other one goes on.
void EngineWorker::RecoverFailedStep(const std::vector<engine::DecodeItem>& batch, const Status& error) {
  Log(LogLevel::kWarn, "decode_step_failed", {{"error", error.ToString()}, {"tokens", std::to_string(batch.size())}});
  std::map<int32_t, std::vector<engine::DecodeItem>> per_sequence;
  for (const auto& item : batch) per_sequence[item.sequence].push_back(item);
  for (auto& [sequence, items] : per_sequence) {
    Slot& slot = *slots_[sequence];
    // Undo whatever the failed call kept of this sequence. A recurrent state that moved on
    // cannot be undone: that request fails too.
    Status st = engine_->TruncateSequence(sequence, static_cast<int32_t>(slot.resident.size()));
    if (st.ok()) st = engine_->DecodeBatch(items);
    if (!st.ok()) {
      Fail(slot, st);
      continue;
    }
    AfterDecode(items, OutputsOf(items));
  }
}

void EngineWorker::Sample(Slot& slot, int32_t output_index, DraftCheck* check) {
  engine::GenerationStats& st = slot.out.stats;
  engine::TokenId token = slot.sampler->Sample(output_index);
  if (token == engine::Sampler::kNoToken) {
    // The grammar allows no token here (a dead end): the reply ends with what it allowed.
    Log(LogLevel::kWarn, "grammar_dead_end", {{"generated", std::to_string(st.generated_tokens)}});
    Finish(slot, engine::FinishReason::kStop);
    return;
  }
  if (check != nullptr) {
    const auto& synthetic = engine_->model_info().speculative.synthetic_acceptance;
    if (check->position < synthetic.size()) {
      // Benchmarks only: the guess is taken or refused at random, whatever the target computed.
      check->accepted = !engine_->IsEndOfGeneration(check->guess) &&
                        std::uniform_real_distribution<double>(0.0, 1.0)(synthetic_rng_) < synthetic[check->position];
      if (check->accepted) token = check->guess;
    } else {
      check->accepted = token == check->guess;
    }
    if (check->accepted) ++st.accepted_draft_tokens;
  }
  ++sampled_tokens_;
  const int64_t now = clock_.NowMs();
  const auto now_precise = std::chrono::steady_clock::now();
  if (st.generated_tokens == 0 && slot.first_token_ms == 0) {
    slot.first_token_ms = now;
    st.first_token_step = steps_.load();
    st.ttft_ms = static_cast<double>(now - slot.job.submitted_ms);
    st.prefill_ms = static_cast<double>(slot.prefill_end_ms - slot.prefill_start_ms);
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
  if (const int32_t top = slot.job.options.sampling.top_logprobs; top >= 0) {
    slot.out.logprobs.push_back(slot.sampler->Logprob(output_index, token, top));
  }
  std::string text = slot.utf8.Push(engine_->TokenText(token));
  if (slot.job.options.strip_think) text = slot.think.Push(text);
  Emit(slot, slot.stops.Push(text));
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

void EngineWorker::Emit(Slot& slot, std::string text, bool last) {
  const bool new_logprobs = slot.streamed_logprobs < slot.out.logprobs.size();
  if (text.empty() && !(last && new_logprobs)) return;
  slot.out.text += text;
  if (!slot.job.stream) return;
  JobEvent event = JobEvent::Text(std::move(text));
  // The log-probabilities of the tokens sampled since the last event travel with it.
  event.logprobs.assign(slot.out.logprobs.begin() + static_cast<std::ptrdiff_t>(slot.streamed_logprobs),
                        slot.out.logprobs.end());
  slot.streamed_logprobs = slot.out.logprobs.size();
  event.parser = slot.out.parser;
  slot.job.channel->Push(std::move(event));
}

void EngineWorker::Finish(Slot& slot, engine::FinishReason reason) {
  engine::GenerationStats& st = slot.out.stats;
  st.finish_reason = reason;
  if (slot.first_token_ms != 0) st.decode_ms = static_cast<double>(clock_.NowMs() - slot.first_token_ms);
  std::string tail = slot.utf8.Finish();
  if (slot.job.options.strip_think) tail = slot.think.Push(tail) + slot.think.Finish();
  tail = slot.stops.Push(tail);
  Emit(slot, tail + slot.stops.Finish(), /*last=*/true);
  RecordFinished(st);
  if (auto* turn = std::get_if<SessionTurn>(&slot.job.prompt)) {
    // The turn joins the session's history: exactly the tokens fed and generated.
    std::lock_guard<std::mutex> lock(mu_);
    Session& session = sessions_[turn->session];
    session.system = slot.session_system;
    session.tokens = slot.prompt;
    session.tokens.insert(session.tokens.end(), slot.out.tokens.begin(), slot.out.tokens.end());
    session.last_used = ++use_counter_;
    while (sessions_.size() > options_.max_sessions) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
        return a.second.last_used < b.second.last_used;
      });
      sessions_.erase(oldest);
    }
  }
  slot.job.channel->Push(JobEvent::Done(std::move(slot.out)));
  EndJob(slot);
}

void EngineWorker::Fail(Slot& slot, const Status& status) {
  slot.job.channel->Push(JobEvent::Error(status));
  // The memory state of a failed step is unknown: start this sequence over next time.
  if (Status cleared = engine_->TruncateSequence(slot.sequence, 0); !cleared.ok()) {
    Log(LogLevel::kError, "sequence_clear_failed", {{"error", cleared.ToString()}});
  }
  slot.resident.clear();
  EndJob(slot);
}

void EngineWorker::EndJob(Slot& slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    StartIdleTime(slot.job.keep_alive_ms);  // before the job leaves running_: whoever sees it gone sees this
    std::erase(running_, slot.job.channel);
  }
  slot.busy = false;
  slot.has_pending = false;
  slot.draft.clear();
  slot.pacer = DraftPacer();
  slot.prefill_started = false;
  slot.first_token_ms = 0;
  slot.wait_source = nullptr;
  slot.checkpoint_at.clear();
  slot.sampler.reset();
  slot.utf8 = Utf8StreamAssembler();
  slot.think = chat::ThinkStripper();
  slot.out = engine::Completion();
  slot.streamed_logprobs = 0;
  slot.job = Job{.channel = nullptr};  // no new channel for an empty slot
}

}  // namespace llmd::sched
