// What every JSON API in src/http shares: dumping JSON safely (bad UTF-8 replaced, never a
// throw), sending an error in the shape its API writes, and ids.
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

// How an API writes an error's body (its front end's ErrorBody).
using ErrorFormat = std::string (*)(const ApiError& error);
// Sends `e` as `format` writes it; returns its HTTP status.
int SendError(Responder& out, const ApiError& e, ErrorFormat format);

// `prefix` and 16 random hex digits ("chatcmpl-...", "call_...", "msg_...").
std::string NewId(const char* prefix);

}  // namespace llmd::http

#endif  // LLMD_HTTP_JSON_REPLY_H_
