#include "http/overflow_fields.h"

#include <string>

#include "http/json_fields.h"

namespace llmd::http {

using engine::ContextOverflow;

Result<OptionalOverflow> TruncationField(const nlohmann::json& body) {
  const nlohmann::json* truncation = Field(body, "truncation");
  if (truncation == nullptr) return OptionalOverflow();
  if (*truncation == "auto") return OptionalOverflow(ContextOverflow::kDropOldest);
  if (*truncation == "disabled") return OptionalOverflow(ContextOverflow::kError);
  if (!truncation->is_string()) return TypeError("truncation", "a string");
  return InvalidArgumentError("'truncation' must be one of auto, disabled (got '" + truncation->get<std::string>() +
                              "')");
}

Result<OptionalOverflow> OllamaTruncateField(const nlohmann::json& body) {
  std::optional<bool> truncate;
  LLMD_RETURN_IF_ERROR(ReadBool(body, "truncate", &truncate));
  if (!truncate) return OptionalOverflow();
  return OptionalOverflow(*truncate ? ContextOverflow::kDropOldest : ContextOverflow::kError);
}

Result<OptionalOverflow> OverflowHeader(std::string_view value) {
  if (value.empty()) return OptionalOverflow();
  if (value == "error") return OptionalOverflow(ContextOverflow::kError);
  if (value == "drop_oldest") return OptionalOverflow(ContextOverflow::kDropOldest);
  return InvalidArgumentError("header X-Llmd-Overflow must be error or drop_oldest (got '" + std::string(value) + "')");
}

}  // namespace llmd::http
