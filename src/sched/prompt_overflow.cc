#include "sched/prompt_overflow.h"

#include <string>

namespace llmd::sched {

std::vector<size_t> ConversationTurnStarts(const std::vector<chat::Message>& messages) {
  std::vector<size_t> starts;
  size_t first = 0;
  while (first < messages.size() && messages[first].role == "system") ++first;
  if (first == messages.size()) return starts;
  starts.push_back(first);
  for (size_t i = first + 1; i < messages.size(); ++i) {
    if (messages[i].role == "user") starts.push_back(i);
  }
  return starts;
}

std::vector<chat::Message> WithoutOldestTurns(const std::vector<chat::Message>& messages,
                                              const std::vector<size_t>& starts, size_t dropped) {
  if (dropped == 0 || starts.empty()) return messages;
  std::vector<chat::Message> kept(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(starts.front()));
  kept.insert(kept.end(), messages.begin() + static_cast<std::ptrdiff_t>(starts[dropped]), messages.end());
  return kept;
}

Status DropOldestTooLongError(size_t prompt_tokens, size_t kept_tokens, int64_t context_tokens, size_t droppable) {
  std::string message = "prompt too long (" + std::to_string(prompt_tokens) + " tokens >= context of " +
                        std::to_string(context_tokens) + ")";
  if (droppable == 0) {
    message += " and overflow drop_oldest has no older turn to drop: the system prompt and the newest turn are kept";
  } else {
    message += " even with overflow drop_oldest: dropping all " + std::to_string(droppable) +
               " older turns leaves " + std::to_string(kept_tokens) + " tokens (the system prompt and the newest turn)";
  }
  return InvalidArgumentError(message + "; at most " + std::to_string(context_tokens - 1) +
                              " prompt tokens fit, with one left to generate")
      .WithReason(ErrorReason::kPromptTooLong);
}

Result<size_t> FewestTurnsToDrop(size_t droppable, int64_t context_tokens, const LengthAfterDrop& length) {
  LLMD_ASSIGN_OR_RETURN(const size_t whole, length(0));
  if (FitsContext(whole, context_tokens)) return size_t{0};
  size_t kept = whole;
  if (droppable > 0) {
    LLMD_ASSIGN_OR_RETURN(kept, length(droppable));
  }
  if (droppable == 0 || !FitsContext(kept, context_tokens)) {
    return DropOldestTooLongError(whole, kept, context_tokens, droppable);
  }
  // length(lo) does not fit, length(hi) does: the fewest that fit lie in (lo, hi].
  size_t lo = 0, hi = droppable;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    LLMD_ASSIGN_OR_RETURN(const size_t n, length(mid));
    if (FitsContext(n, context_tokens)) hi = mid;
    else lo = mid;
  }
  return hi;
}

std::optional<size_t> UserMessageStart(std::span<const engine::TokenId> turn, engine::TokenId message_start) {
  if (message_start < 0) return std::nullopt;
  std::optional<size_t> last, before_last;
  for (size_t i = 0; i < turn.size(); ++i) {
    if (turn[i] != message_start) continue;
    before_last = last;
    last = i;
  }
  return before_last;
}

size_t DropSessionTurns(std::vector<engine::TokenId>* tokens, std::vector<uint32_t>* starts, size_t k) {
  if (k == 0 || starts->empty()) return 0;
  const uint32_t from = (*starts)[0];
  const uint32_t to = (*starts)[k];
  const size_t gone = to - from;
  tokens->erase(tokens->begin() + from, tokens->begin() + to);
  starts->erase(starts->begin() + 1, starts->begin() + static_cast<std::ptrdiff_t>(k) + 1);
  for (size_t i = 1; i < starts->size(); ++i) (*starts)[i] -= static_cast<uint32_t>(gone);
  return gone;
}

}  // namespace llmd::sched
