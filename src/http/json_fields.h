// Reading request fields from JSON the same way in every API parser: a null value counts as
// absent, a value of the wrong type or out of range is InvalidArgument naming the field.
#ifndef LLMD_HTTP_JSON_FIELDS_H_
#define LLMD_HTTP_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::http {

// "'FIELD' must be WANT".
Status TypeError(const std::string& field, const char* want);

// The field's value, or nullptr when absent or null.
const nlohmann::json* Field(const nlohmann::json& obj, const char* key);

// Each leaves `out` as it is when the field is absent; `field` names it in errors (default: key).
Status ReadBool(const nlohmann::json& obj, const char* key, bool* out, const std::string& field = {});
Status ReadBool(const nlohmann::json& obj, const char* key, std::optional<bool>* out, const std::string& field = {});
Status ReadNumber(const nlohmann::json& obj, const char* key, double lo, double hi, std::optional<float>* out);
Status ReadInteger(const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>* out);

// A string field that must be present and not empty; `where` prefixes its name in errors.
Result<std::string> RequiredString(const nlohmann::json& obj, const char* key, const std::string& where);
// A string field that may be absent; `allowed` lists its accepted values (empty: any).
Result<std::optional<std::string>> OptionalString(const nlohmann::json& obj, const char* key, const std::string& field,
                                                  std::initializer_list<const char*> allowed = {});

// The body as a JSON object, or InvalidArgument saying why not.
Result<nlohmann::json> ParseObject(std::string_view body);

}  // namespace llmd::http

#endif  // LLMD_HTTP_JSON_FIELDS_H_
