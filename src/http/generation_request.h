// GenerationRequest: one generation as every HTTP API's parser hands it on (OpenAI chat and
// completions, Responses, Anthropic Messages, Ollama chat and generate), whatever its wire
// format; MakeGenerationJob (generation.h) turns it into the job. The field notes name the
// OpenAI fields; each API's parser says what it fills them from. Also the limits every
// parser checks its request against.
#ifndef LLMD_HTTP_GENERATION_REQUEST_H_
#define LLMD_HTTP_GENERATION_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/prompt_pieces.h"
#include "common/request_class.h"
#include "engine/types.h"

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
  // Ollama's keep_alive: how long the model's working memory stays after this request (0:
  // freed at once); none: the configured idle time.
  std::optional<int64_t> keep_alive_ms;
  // Ollama's options.num_ctx: this request's own context (prompt and answer), at most the
  // model's.
  std::optional<int64_t> context_tokens;
  // Who waits on the answer (request_class_fields.h: service_tier, priority, X-Llmd-Class);
  // none: the peer's configured class.
  std::optional<RequestClass> request_class;
  // X-Llmd-Deadline-Ms: the first token is wanted within this many ms (Job).
  std::optional<uint32_t> first_token_deadline_ms;
  // A chat longer than the context: refused, or its oldest whole turns dropped (the usage then
  // says what went). From the API's own field (overflow_fields.h: truncation, Ollama's
  // truncate); none: the X-Llmd-Overflow header, else refused.
  std::optional<engine::ContextOverflow> overflow;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_GENERATION_REQUEST_H_
