// EngineWorker's prompt preparer: a job's prompt built from its source (a chat, a session's
// next turn, a conversation, raw text), checked, and placed on a slot with what it reuses;
// embedding jobs run here at once.
#include <type_traits>
#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "common/log.h"
#include "sched/engine_worker.h"
#include "sched/engine_worker_slot.h"

namespace llmd::sched {

Result<engine::ChatPlan> EngineWorker::BuildPrompt(Job& job) {
  const bool sanitize = job.sanitize;
  auto tokens_only = [](Result<std::vector<engine::TokenId>> prompt) -> Result<engine::ChatPlan> {
    if (!prompt.has_value()) return prompt.error();
    engine::ChatPlan plan;
    plan.prompt = std::move(*prompt);
    return plan;
  };
  return FitToContext(job, std::visit(
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
          if (std::optional<StoredSession> stored = sessions_.Get(p.session)) {
            history = std::move(stored->tokens);
            system = std::move(stored->system);
            p.turn_starts = std::move(stored->turn_starts);
          }
          LLMD_ASSIGN_OR_RETURN(auto turn, history.empty() ? engine_->ChatPrompt(system, p.user, sanitize)
                                                           : engine_->NextTurnPrompt(system, p.user, sanitize));
          NoteTurnStart(p, history.size(), turn);
          history.insert(history.end(), turn.begin(), turn.end());
          p.system = std::move(system);
          return tokens_only(std::move(history));
        }
      },
      job.prompt));
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
      if (inputs.truncate) {
        // The most one input may hold: the context (num_ctx, else the model's), and what the
        // engine takes in one batch.
        const auto most = static_cast<size_t>(std::min<int64_t>(ContextFor(job), options_.batch_tokens));
        if (tokens.size() > most) tokens.resize(most);
      }
      done.stats.prompt_tokens += static_cast<int32_t>(tokens.size());
      // num_ctx (the request's, else its model's manifest's) narrows what one input may hold;
      // the engine refuses what its own context cannot.
      const int64_t n_ctx = job.options.context_tokens;
      if (n_ctx > 0 && n_ctx < engine_->model_info().context_tokens && static_cast<int64_t>(tokens.size()) > n_ctx) {
        return InvalidArgumentError(std::to_string(tokens.size()) + " tokens, more than the context of " +
                                    std::to_string(n_ctx) + " (num_ctx: the request's, else its model's manifest's)")
            .WithReason(ErrorReason::kPromptTooLong);
      }
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

int64_t EngineWorker::ContextFor(const Job& job) const {
  const int64_t model = engine_->model_info().context_tokens;
  return job.options.context_tokens > 0 ? std::min<int64_t>(model, job.options.context_tokens) : model;
}

// The numbers a client needs to fix it: what the prompt takes, what a request may hold and
// where that limit comes from.
Status EngineWorker::PromptTooLongError(size_t prompt_tokens, const Job& job) const {
  const engine::ModelInfo& info = engine_->model_info();
  const int64_t n_ctx = ContextFor(job);
  std::string where;
  if (n_ctx < info.context_tokens) {
    where = "the request's own context (num_ctx: the request's, else its model's manifest's)";
  } else if (info.pool_tokens > 0) {
    where = "the KV pool the requests share, sized from the model's trained context (" +
            std::to_string(info.trained_context) + ") and the memory budget";
  } else {
    where = "max_context_len in the config";
  }
  return InvalidArgumentError("prompt too long (" + std::to_string(prompt_tokens) + " tokens >= context of " +
                              std::to_string(n_ctx) + "): a request holds at most " + std::to_string(n_ctx - 1) +
                              " prompt tokens and one to generate; the limit is " + where)
      .WithReason(ErrorReason::kPromptTooLong);
}

Status EngineWorker::CheckDeadline(const Job& job, size_t uncached_tokens) const {
  if (!job.first_token_deadline_ms) return Status::Ok();
  WaitEstimate estimate = EstimateWait(Costs(), 0, 0, 1, uncached_tokens);
  estimate.queue_ms = clock_.NowMs() - job.submitted_ms;  // waited already
  if (!estimate.known || estimate.first_token_ms() <= *job.first_token_deadline_ms) return Status::Ok();
  return DeadlineUnmeetableError(estimate, *job.first_token_deadline_ms);
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
  const int64_t n_ctx = ContextFor(job);
  if (error.ok() && static_cast<int64_t>(prompt->size()) >= n_ctx) error = PromptTooLongError(prompt->size(), job);
  if (error.ok() && job.count_only) {
    engine::Completion counted;
    counted.stats.prompt_tokens = static_cast<int32_t>(prompt->size());
    Unadmit(job, JobEvent::Done(std::move(counted)));
    return;
  }
  std::unique_ptr<engine::Sampler> sampler;
  if (error.ok()) {
    auto s = engine_->NewSampler(job.options.sampling, *prompt);
    if (s.has_value()) sampler = std::move(*s);
    else error = s.error();
  }
  if (!error.ok()) {
    Unadmit(job, JobEvent::Error(error));
    return;
  }
  Place(std::move(job), std::move(*chat_plan), std::move(sampler));
}

// A checked job onto the slot that lets it reuse the most, unless its deadline is already lost.
void EngineWorker::Place(Job job, engine::ChatPlan chat_plan, std::unique_ptr<engine::Sampler> sampler) {
  std::vector<engine::TokenId>& prompt = chat_plan.prompt;
  std::vector<size_t> cuts = PromptCuts(prompt);
  const ReusePlan plan = PlanReuse(prompt, ShapeMatters() ? &cuts : nullptr, job.request_class, nullptr,
                                   PlaceTakenOver(job.request_class));
  if (Status late = CheckDeadline(job, prompt.size() - plan.keep); !late.ok()) {
    Unadmit(job, JobEvent::Error(late));
    return;
  }
  const int64_t n_ctx = ContextFor(job);
  Slot& slot = *plan.target;
  const size_t keep = ApplyReuse(plan);
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug, "job_placed",
        {{"class", RequestClassName(job.request_class)},
         {"sequence", std::to_string(slot.sequence)},
         {"prompt_tokens", std::to_string(prompt.size())},
         {"kept", std::to_string(keep)},
         {"from", plan.pinned != nullptr ? std::string("pinned") : std::to_string(plan.source->sequence)},
         {"longest_common", std::to_string(plan.best_common)}});
  }
  slot.busy = true;
  slot.job_id = static_cast<uint64_t>(++use_counter_);
  slot.last_used = use_counter_;
  slot.prompt = std::move(prompt);
  slot.cuts = std::move(cuts);
  slot.prefilled = keep;
  slot.prompt_end = keep == slot.prompt.size() ? plan.prompt_end : nullptr;
  slot.sampler = std::move(sampler);
  slot.budget = std::min<int64_t>(job.options.max_tokens, n_ctx - static_cast<int64_t>(slot.prompt.size()));
  slot.stops = chat::StopStrings(job.stop);
  slot.out.parser = std::move(chat_plan.parser);
  slot.out.stats.prompt_tokens = static_cast<int32_t>(slot.prompt.size());
  slot.out.stats.cached_tokens = static_cast<int32_t>(keep);
  slot.out.stats.queue_ms = static_cast<double>(clock_.NowMs() - job.submitted_ms);
  if (auto* turn = std::get_if<SessionTurn>(&job.prompt)) slot.session_system = turn->system;
  if (job.request_class == RequestClass::kInteractive) last_interactive_ms_ = clock_.NowMs();
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
  if (slot.prefilled == slot.prompt.size()) SampleKeptPromptEnd(slot);
}

}  // namespace llmd::sched
