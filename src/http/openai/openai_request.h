// The body of an OpenAI /v1/chat/completions or /v1/completions request, parsed from JSON
// into our own struct at the edge (nothing past src/http sees JSON).
//
// Strict where it matters: a known field of the wrong type or out of range is
// InvalidArgument naming the field; parameters llmd cannot honour (best_of, echo, audio,
// ...) are InvalidArgument too, rather than silently ignored. Unknown fields are ignored, as
// OpenAI clients send extras; a null value counts as absent.
#ifndef LLMD_HTTP_OPENAI_OPENAI_REQUEST_H_
#define LLMD_HTTP_OPENAI_OPENAI_REQUEST_H_

#include <string_view>

#include "http/generation_request.h"  // GenerationRequest and its limits, for every includer
#include "llmd/result.h"

namespace llmd::http {

Result<GenerationRequest> ParseChatRequest(std::string_view body);
Result<GenerationRequest> ParseCompletionRequest(std::string_view body);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_OPENAI_REQUEST_H_
