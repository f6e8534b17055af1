// The body of an OpenAI /v1/chat/completions or /v1/completions request, parsed from JSON
// into our own struct at the edge (nothing past src/http sees JSON).
//
// Strict where it matters: a known field of the wrong type or out of range is
// InvalidArgument naming the field; parameters llmd cannot honour (best_of, echo, audio,
// ...) are InvalidArgument too, rather than silently ignored. Unknown fields are ignored, as
// OpenAI clients send extras; a null value counts as absent.
#ifndef LLMD_HTTP_OPENAI_REQUEST_H_
#define LLMD_HTTP_OPENAI_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::http {

constexpr size_t kMaxStopStrings = 4;
constexpr size_t kMaxStopBytes = 256;
constexpr uint32_t kMaxChoices = 8;        // n
constexpr int32_t kMaxTopLogprobs = 20;    // OpenAI's limit
constexpr size_t kMaxLogitBias = 1024;     // entries of logit_bias

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
  bool ignore_eos = false;              // llama-server's extension: never sample end-of-generation
  bool include_usage = false;    // stream_options.include_usage
  // Thinking: chat_template_kwargs.enable_thinking or reasoning_effort; none: the model's
  // configured default.
  std::optional<bool> enable_thinking;
  // Tools, tool_choice, parallel_tool_calls and response_format (json_object/json_schema),
  // as the engine takes them (format.enable_thinking is set from the field above).
  engine::ChatFormat format;
  uint32_t n = 1;                  // choices
  int32_t top_logprobs = -1;       // -1: no logprobs; else logprobs with this many alternatives
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias
  // llama-server's speculative.n_max: at most this many tokens drafted per step (the server's
  // draft_max caps it); 0: no speculative decoding for this request; none: the server's.
  std::optional<uint32_t> draft_max;
};

Result<GenerationRequest> ParseChatRequest(std::string_view body);
Result<GenerationRequest> ParseCompletionRequest(std::string_view body);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_REQUEST_H_
