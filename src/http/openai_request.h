// The body of an OpenAI /v1/chat/completions or /v1/completions request, parsed from JSON
// into our own struct at the edge (nothing past src/http sees JSON).
//
// Strict where it matters: a known field of the wrong type or out of range is
// InvalidArgument naming the field; parameters llmd cannot honour (n > 1, logprobs, tools,
// echo, ...) are InvalidArgument too, rather than silently ignored. Unknown fields are
// ignored, as OpenAI clients send extras; a null value counts as absent.
#ifndef LLMD_HTTP_OPENAI_REQUEST_H_
#define LLMD_HTTP_OPENAI_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/prompt_pieces.h"
#include "llmd/result.h"

namespace llmd::http {

constexpr size_t kMaxStopStrings = 4;
constexpr size_t kMaxStopBytes = 256;

struct GenerationRequest {
  bool chat = true;
  std::vector<chat::Message> messages;  // chat: "developer" becomes "system"
  std::string prompt;                   // completions
  std::optional<std::string> model;
  std::optional<uint32_t> max_tokens;   // max_tokens or max_completion_tokens (0: empty answer)
  std::optional<float> temperature, top_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int32_t> top_k;
  std::optional<uint32_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  bool enable_thinking = false;  // chat_template_kwargs.enable_thinking
};

Result<GenerationRequest> ParseChatRequest(std::string_view body);
Result<GenerationRequest> ParseCompletionRequest(std::string_view body);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_REQUEST_H_
