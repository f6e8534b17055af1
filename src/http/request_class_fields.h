// The request-class fields of the HTTP APIs (common/request_class.h), read in one place:
//  - OpenAI's and the Responses API's `service_tier`: priority -> interactive, flex ->
//    background, default -> normal, auto -> the peer's configured class;
//  - vLLM's integer `priority` (lower is sooner): < 0 interactive, 0 the peer's class, > 0
//    background;
//  - Anthropic's `service_tier`: auto -> the peer's class, standard_only -> normal;
//  - the `X-Llmd-Class` header, for every API (Ollama's has no field of its own): interactive,
//    normal or background.
// None of them can raise a request above its peer's ceiling (ResolveClass).
#ifndef LLMD_HTTP_REQUEST_CLASS_FIELDS_H_
#define LLMD_HTTP_REQUEST_CLASS_FIELDS_H_

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "common/request_class.h"
#include "llmd/result.h"

namespace llmd::http {

// service_tier, then priority (service_tier wins when both are set).
Result<std::optional<RequestClass>> OpenAiRequestClass(const nlohmann::json& body);
Result<std::optional<RequestClass>> AnthropicRequestClass(const nlohmann::json& body);
// The header's value; "" (absent): none.
Result<std::optional<RequestClass>> RequestClassHeader(std::string_view value);

inline constexpr const char* kRequestClassHeader = "x-llmd-class";

// X-Llmd-Deadline-Ms: the first token is wanted within this many ms (1..3600000); "": none.
Result<std::optional<uint32_t>> DeadlineHeader(std::string_view value);
inline constexpr const char* kDeadlineHeader = "x-llmd-deadline-ms";

}  // namespace llmd::http

#endif  // LLMD_HTTP_REQUEST_CLASS_FIELDS_H_
