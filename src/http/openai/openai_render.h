// The JSON pieces of OpenAI chat and completion responses that depend on what was generated:
// the assistant message (content, reasoning, tool calls), stream deltas, log-probabilities in
// the chat and the legacy completions shapes, and the usage.
#ifndef LLMD_HTTP_OPENAI_OPENAI_RENDER_H_
#define LLMD_HTTP_OPENAI_OPENAI_RENDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/types.h"
#include "http/api_error.h"
#include "http/reply_deltas.h"

namespace llmd::http {

// {"role":"assistant","content":...,"reasoning_content"?:...,"tool_calls"?:[...]}; content is
// null when the reply is only tool calls, as OpenAI sends it.
nlohmann::json AssistantMessage(const engine::ParsedReply& reply);
// A chat.completion.chunk delta: content, reasoning_content and tool_calls fragments (id,
// type and name in a call's first fragment only).
nlohmann::json ChatDelta(const ReplyDelta& delta);
// {"content":[{token, logprob, bytes, top_logprobs:[...]}]}
nlohmann::json ChatLogprobs(const std::vector<engine::TokenLogprob>& tokens);
// `usage` of chat and completions: prompt_tokens, completion_tokens, total_tokens,
// prompt_tokens_details.cached_tokens and, only when speculative decoding drafted, llmd's
// draft_tokens and accepted_draft_tokens.
nlohmann::json OpenAiUsage(const engine::GenerationStats& stats);
// The legacy completions shape: {tokens, token_logprobs, top_logprobs, text_offset}, offsets
// counted from `offset` (bytes of text before these tokens).
nlohmann::json CompletionLogprobs(const std::vector<engine::TokenLogprob>& tokens, size_t offset);
// OpenAI's error body: {"error":{"message","type","param","code"}} (the Responses API's too).
std::string OpenAiErrorBody(const ApiError& error);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_OPENAI_RENDER_H_
