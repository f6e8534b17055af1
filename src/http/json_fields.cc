#include "http/json_fields.h"

#include <algorithm>
#include <cmath>

namespace llmd::http {

using nlohmann::json;

Status TypeError(const std::string& field, const char* want) {
  return InvalidArgumentError("'" + field + "' must be " + want);
}

const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status ReadBool(const json& obj, const char* key, std::optional<bool>* out, const std::string& field) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return TypeError(field.empty() ? key : field, "true or false");
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadBool(const json& obj, const char* key, bool* out, const std::string& field) {
  std::optional<bool> v;
  LLMD_RETURN_IF_ERROR(ReadBool(obj, key, &v, field));
  if (v) *out = *v;
  return Status::Ok();
}

Status ReadNumber(const json& obj, const char* key, double lo, double hi, std::optional<float>* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return TypeError(key, "a number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return InvalidArgumentError("'" + std::string(key) + "' must be in " + json(lo).dump() + ".." + json(hi).dump());
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status ReadInteger(const json& obj, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number_integer()) return TypeError(key, "an integer");
  const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
  if (too_big || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
    return InvalidArgumentError("'" + std::string(key) + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = v->get<int64_t>();
  return Status::Ok();
}

Result<std::string> RequiredString(const json& obj, const char* key, const std::string& where) {
  const json* v = Field(obj, key);
  if (v == nullptr || !v->is_string() || v->get_ref<const std::string&>().empty()) {
    return TypeError(where + "." + key, "a non-empty string");
  }
  return v->get<std::string>();
}

Result<std::optional<std::string>> OptionalString(const json& obj, const char* key, const std::string& field,
                                                  std::initializer_list<const char*> allowed) {
  const json* v = Field(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return TypeError(field, "a string");
  std::string s = v->get<std::string>();
  if (allowed.size() != 0 && std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return s == a; })) {
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return InvalidArgumentError("'" + field + "' must be one of " + list + " (got '" + s + "')");
  }
  return std::optional<std::string>(std::move(s));
}

Result<json> ParseObject(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgumentError("the request body must be a JSON object");
  return j;
}

}  // namespace llmd::http
