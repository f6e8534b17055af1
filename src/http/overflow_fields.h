// The overflow policy of the HTTP APIs (engine::ContextOverflow: what a chat longer than the
// context does), read in one place:
//  - `truncation` ("auto": drop_oldest, "disabled": error), the Responses API's field, which
//    llmd also takes on chat/completions and completions;
//  - Ollama's `truncate` (true: drop_oldest, false: error) on /api/chat and /api/generate;
//  - the `X-Llmd-Overflow: error|drop_oldest` header, for every API (Anthropic's has no field
//    of its own); a body field wins over it, as with X-Llmd-Class.
// Absent everywhere, a request is refused when it does not fit (engine::ContextOverflow's
// default, error): llmd never drops a client's text unless it asked, also on Ollama's API,
// whose own server truncates by default (silent truncation is the failure agents report).
#ifndef LLMD_HTTP_OVERFLOW_FIELDS_H_
#define LLMD_HTTP_OVERFLOW_FIELDS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::http {

using OptionalOverflow = std::optional<engine::ContextOverflow>;

// `truncation`; none when absent.
Result<OptionalOverflow> TruncationField(const nlohmann::json& body);
// Ollama's `truncate`; none when absent.
Result<OptionalOverflow> OllamaTruncateField(const nlohmann::json& body);
// The header's value; "" (absent): none.
Result<OptionalOverflow> OverflowHeader(std::string_view value);

inline constexpr const char* kOverflowHeader = "x-llmd-overflow";

}  // namespace llmd::http

#endif  // LLMD_HTTP_OVERFLOW_FIELDS_H_
