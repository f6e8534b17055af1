// What every generating HTTP API (OpenAI, Responses, Ollama, Anthropic) shares once its
// request is parsed into a GenerationRequest (generation_request.h): the job it becomes (the
// configured defaults, caps and system prompt applied once) and the final reply taken apart
// by the reply's parser.
#ifndef LLMD_HTTP_GENERATION_H_
#define LLMD_HTTP_GENERATION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/types.h"
#include "http/generation_request.h"
#include "http/reply_deltas.h"
#include "sched/job.h"

namespace llmd::http {

// The job of a request: the conversation (the configured system prompt added when it has
// none, thinking from the request, else enable_thinking or thinking_models) or raw prompt, max_tokens capped by
// max_new_tokens, draft_max capped by the server's, sampling overrides on the configured defaults.
// Moves the messages out.
sched::Job MakeGenerationJob(GenerationRequest& request, const config::DaemonConfig& config,
                             const PeerIdentity& peer = {});

// The user's side of the exchange, as the guard cascade judges it: the last user message
// (chat) or the prompt.
std::string GuardedPrompt(const GenerationRequest& request);

// A finished reply, parsed. `tool_calls`: the reply is calls (finish "tool_calls"); `cut`: the
// token limit or a cancel ended it. A call the limit cut short is dropped; a malformed call in
// a reply that ended by itself makes the whole reply text, as written. Ids come from `deltas`
// (those a stream already sent).
struct FinalReply {
  engine::ParsedReply reply;
  bool tool_calls = false;
  bool cut = false;
};
FinalReply ParseFinalReply(const engine::Completion& done, ReplyDeltas& deltas);

// Which of `stops` ended a reply that finished by itself, if one did: the earliest that ends
// within the last generated token (the engine stops at the token that completes a stop
// sequence and cuts it, and what follows, from the reply). `generated` is the text of all the
// generated tokens, the cut included; `last_token_bytes` the length of the last one's.
std::optional<std::string> MatchedStopSequence(const std::vector<std::string>& stops, std::string_view generated,
                                               size_t last_token_bytes);

}  // namespace llmd::http

#endif  // LLMD_HTTP_GENERATION_H_
