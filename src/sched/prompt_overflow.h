// Prompt overflow, the pure part: which whole turns of a chat to drop so its prompt fits the
// context (engine::ContextOverflow::kDropOldest), and the error when even that cannot.
//
// A chat is its leading system prompt, then turns: a turn starts at a user message and holds
// everything up to the next one (the assistant's reply, its tool calls and their results go
// with it, never half a turn). The system prompt is never dropped, nor the newest turn (the
// one being answered); the oldest turns go first. The worker's part
// (engine_worker_overflow.cc) renders the kept messages again or cuts a session's tokens.
#ifndef LLMD_SCHED_PROMPT_OVERFLOW_H_
#define LLMD_SCHED_PROMPT_OVERFLOW_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::sched {

// The limit every prompt meets: it fits when at least one token is left to generate.
inline bool FitsContext(size_t prompt_tokens, int64_t context_tokens) {
  return static_cast<int64_t>(prompt_tokens) < context_tokens;
}

// Where each turn of `messages` starts: the first message after the leading system messages,
// then every later user message. The last one is the newest turn; empty when there is no
// message but system ones.
std::vector<size_t> ConversationTurnStarts(const std::vector<chat::Message>& messages);

// `messages` without its `dropped` oldest turns (`starts` from ConversationTurnStarts;
// dropped < starts.size()): the leading system messages, then the turns from starts[dropped].
std::vector<chat::Message> WithoutOldestTurns(const std::vector<chat::Message>& messages,
                                              const std::vector<size_t>& starts, size_t dropped);

// The prompt's length in tokens with the k oldest turns dropped.
using LengthAfterDrop = std::function<Result<size_t>(size_t k)>;

// The fewest of the `droppable` oldest turns to drop so the prompt fits `context_tokens`:
// 0 when it fits as it is. `length` is asked a few times (a binary search: fewer turns never
// make a longer prompt). When even dropping all of them does not fit: kPromptTooLong with
// the counts (DropOldestTooLongError); `length`'s own errors come back as they are.
Result<size_t> FewestTurnsToDrop(size_t droppable, int64_t context_tokens, const LengthAfterDrop& length);

// The refusal when dropping every droppable turn still leaves `kept_tokens` (the system prompt
// and the newest turn), `prompt_tokens` before any was dropped.
Status DropOldestTooLongError(size_t prompt_tokens, size_t kept_tokens, int64_t context_tokens, size_t droppable);

// Where the user message starts in a chat turn's prompt tokens (a session's first turn, with
// its system prompt, or a next turn): at the second to last message-start token, the last
// opening the reply. None when the template has no such token or the turn holds fewer than
// two (its start cannot be told, so it is never cut apart from the turn before).
std::optional<size_t> UserMessageStart(std::span<const engine::TokenId> turn, engine::TokenId message_start);

// Drops a session's `k` oldest turns from `tokens` (k < starts.size()): the tokens before
// starts[0] stay, then those from starts[k]; the later starts move with their tokens.
// Returns how many tokens went.
size_t DropSessionTurns(std::vector<engine::TokenId>* tokens, std::vector<uint32_t>* starts, size_t k);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_PROMPT_OVERFLOW_H_
