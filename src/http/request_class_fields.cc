#include "http/request_class_fields.h"

#include <charconv>
#include <string>

#include "http/json_fields.h"

namespace llmd::http {

using nlohmann::json;
using MaybeClass = std::optional<RequestClass>;

Result<std::optional<RequestClass>> OpenAiRequestClass(const json& body) {
  LLMD_ASSIGN_OR_RETURN(auto tier,
                        OptionalString(body, "service_tier", "service_tier", {"auto", "default", "flex", "priority"}));
  if (tier == "priority") return MaybeClass(RequestClass::kInteractive);
  if (tier == "flex") return MaybeClass(RequestClass::kBackground);
  if (tier == "default") return MaybeClass(RequestClass::kNormal);
  if (tier == "auto") return MaybeClass();
  std::optional<int64_t> priority;
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "priority", INT32_MIN, INT32_MAX, &priority));
  if (!priority || *priority == 0) return MaybeClass();
  return MaybeClass(*priority < 0 ? RequestClass::kInteractive : RequestClass::kBackground);
}

Result<std::optional<RequestClass>> AnthropicRequestClass(const json& body) {
  LLMD_ASSIGN_OR_RETURN(auto tier, OptionalString(body, "service_tier", "service_tier", {"auto", "standard_only"}));
  if (tier == "standard_only") return MaybeClass(RequestClass::kNormal);
  return MaybeClass();
}

Result<std::optional<RequestClass>> RequestClassHeader(std::string_view value) {
  if (value.empty()) return MaybeClass();
  if (auto c = ParseRequestClass(value)) return MaybeClass(c);
  return InvalidArgumentError("header X-Llmd-Class must be interactive, normal or background (got '" +
                              std::string(value) + "')");
}

Result<std::optional<uint32_t>> DeadlineHeader(std::string_view value) {
  if (value.empty()) return std::optional<uint32_t>();
  uint32_t ms = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || end != value.data() + value.size() || ms < 1 || ms > 3600000) {
    return InvalidArgumentError("header X-Llmd-Deadline-Ms must be a whole number of milliseconds in [1, 3600000] (got '" +
                                std::string(value) + "')");
  }
  return std::optional<uint32_t>(ms);
}

}  // namespace llmd::http
