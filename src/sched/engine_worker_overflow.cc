// EngineWorker's part of prompt overflow (sched/prompt_overflow.h): a chat prompt that does
// not fit the context, with ContextOverflow::kDropOldest, loses its oldest whole turns. A
// conversation is rendered again without them, so its prompt is exactly what the template
// makes of the kept messages; a session's tokens are cut at its recorded turn starts, and the
// session keeps the shorter history (its memory is then reused only up to the system prompt,
// since everything after it moved).
#include <map>
#include <utility>
#include <vector>

#include "sched/engine_worker.h"
#include "sched/prompt_overflow.h"

namespace llmd::sched {

void EngineWorker::NoteTurnStart(SessionTurn& turn, size_t at, const std::vector<engine::TokenId>& tokens) const {
  if (std::optional<size_t> start = UserMessageStart(tokens, engine_->MessageStartToken())) {
    turn.turn_starts.push_back(static_cast<uint32_t>(at + *start));
  }
}

namespace {

size_t Droppable(size_t turns) { return turns == 0 ? 0 : turns - 1; }  // never the newest

}  // namespace

Result<engine::ChatPlan> EngineWorker::FitToContext(Job& job, Result<engine::ChatPlan> plan) {
  if (!plan.has_value() || job.overflow != engine::ContextOverflow::kDropOldest) return plan;
  const int64_t n_ctx = ContextFor(job);  // the limit Admit holds the prompt to
  const size_t whole = plan->prompt.size();
  if (FitsContext(whole, n_ctx)) return plan;

  if (auto* conversation = std::get_if<Conversation>(&job.prompt)) {
    const std::vector<size_t> starts = ConversationTurnStarts(conversation->messages);
    std::map<size_t, engine::ChatPlan> rendered;  // by turns dropped
    rendered.emplace(0, std::move(*plan));
    auto length = [&](size_t k) -> Result<size_t> {
      auto it = rendered.find(k);
      if (it == rendered.end()) {
        LLMD_ASSIGN_OR_RETURN(engine::ChatPlan kept,
                              engine_->ConversationPrompt(WithoutOldestTurns(conversation->messages, starts, k),
                                                          conversation->format, job.sanitize));
        it = rendered.emplace(k, std::move(kept)).first;
      }
      return it->second.prompt.size();
    };
    LLMD_ASSIGN_OR_RETURN(const size_t k, FewestTurnsToDrop(Droppable(starts.size()), n_ctx, length));
    engine::ChatPlan fitted = std::move(rendered.at(k));  // FewestTurnsToDrop measured it
    job.dropped_tokens = static_cast<int32_t>(whole - fitted.prompt.size());
    job.dropped_turns = static_cast<int32_t>(k);
    conversation->messages = WithoutOldestTurns(conversation->messages, starts, k);
    return fitted;
  }

  if (auto* turn = std::get_if<SessionTurn>(&job.prompt)) {
    const std::vector<uint32_t>& starts = turn->turn_starts;
    auto length = [&](size_t k) -> Result<size_t> { return whole - (k == 0 ? 0 : starts[k] - starts[0]); };
    LLMD_ASSIGN_OR_RETURN(const size_t k, FewestTurnsToDrop(Droppable(starts.size()), n_ctx, length));
    job.dropped_tokens = static_cast<int32_t>(DropSessionTurns(&plan->prompt, &turn->turn_starts, k));
    job.dropped_turns = static_cast<int32_t>(k);
    return plan;
  }

  // A one-shot chat or raw text has no turns to drop.
  return DropOldestTooLongError(whole, whole, n_ctx, 0);
}

}  // namespace llmd::sched
