// What every JSON API in src/http shares: dumping JSON safely (bad UTF-8 replaced, never a
// throw), sending an error in the shape of the API the request was for, and ids.
#ifndef LLMD_HTTP_JSON_REPLY_H_
#define LLMD_HTTP_JSON_REPLY_H_

#include <nlohmann/json.hpp>
#include <string>

#include "http/http_server.h"
#include "http/api_error.h"

namespace llmd::http {

constexpr const char* kJsonType = "application/json";

std::string Dump(const nlohmann::json& j);

// A float as the shortest decimal that reads back as it (1e-06, not 9.99999997e-07); NaN and
// infinities, which JSON cannot hold, as null.
nlohmann::json SerializeFloat(float f);

// Which API's error shape a path gets: /api/* is Ollama's ({"error": "..."}), /v1/messages*
// Anthropic's ({"type":"error","error":{"type","message"}}), everything else OpenAI's.
enum class ErrorShape { kOpenAi, kOllama, kAnthropic };
ErrorShape ErrorShapeFor(const std::string& path);
std::string ErrorBody(const ApiError& e, ErrorShape shape);
// Sends `e` in `shape`; returns its HTTP status.
int SendError(Responder& out, const ApiError& e, ErrorShape shape = ErrorShape::kOpenAi);

// `prefix` and 16 random hex digits ("chatcmpl-...", "call_...", "msg_...").
std::string NewId(const char* prefix);

}  // namespace llmd::http

#endif  // LLMD_HTTP_JSON_REPLY_H_
