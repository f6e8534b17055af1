// A rendered prompt as pieces: template text (may spell control tokens) and user text (never
// parsed for control tokens). Keeping them apart is what stops a typed "<|im_end|>" from
// closing the turn. Also the ChatML fallback for models without a usable template.
#ifndef LLMD_CHAT_PROMPT_PIECES_H_
#define LLMD_CHAT_PROMPT_PIECES_H_

#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::chat {

// A function call the assistant made: its id, the function's name and its arguments as
// JSON text.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// One message of a conversation, as an OpenAI client sends it.
struct Message {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;          // tool: the call this message answers
};

struct PromptPiece {
  std::string text;
  bool user = false;  // true: tokenize as plain text
};
using PromptPieces = std::vector<PromptPiece>;

// Splits `rendered`, which must contain each of `markers` exactly once and in order, into
// template pieces and the matching `values` (user pieces). Internal error otherwise.
Result<PromptPieces> SplitAtMarkers(std::string_view rendered,
                                    const std::vector<std::string>& markers,
                                    const std::vector<std::string_view>& values);

// ChatML, with Qwen3's empty think block when thinking is off:
//   <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n
//   <|im_start|>assistant\n<think>\n\n</think>\n\n
PromptPieces ChatMlFirstTurn(std::string_view system, std::string_view user);
// The text that closes the previous reply and opens the next turn.
PromptPieces ChatMlNextTurn(std::string_view user);
// A whole conversation, ending with the assistant's generation prompt (with the empty think
// block unless `enable_thinking`). Every message's content is a user piece.
PromptPieces ChatMlConversation(const std::vector<Message>& messages, bool enable_thinking);

}  // namespace llmd::chat

#endif  // LLMD_CHAT_PROMPT_PIECES_H_
