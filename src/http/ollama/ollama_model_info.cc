// Ollama's model facts (/api/show, /api/tags) as JSON. format::ReadGgufMetadata reads them
// from the model file; this only renders what it found.
#include "http/ollama/ollama_api.h"

#include <cmath>
#include <cstdio>
#include <type_traits>
#include <variant>

#include "http/json_reply.h"

namespace llmd::http {

using nlohmann::json;

namespace {

// A scalar as Ollama shows it: an f32 in its shortest form, a non-finite float as null.
template <typename T>
json ScalarJson(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return SerializeFloat(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::isfinite(v) ? json(v) : json(nullptr);
  } else {
    return json(v);
  }
}

json ValueJson(const format::GgufValue& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, std::vector<format::GgufScalar>>) {
          json list = json::array();
          for (const format::GgufScalar& x : v) {
            list.push_back(std::visit([](auto s) { return ScalarJson(s); }, x));
          }
          return list;
        } else {
          return ScalarJson(v);
        }
      },
      value);
}

}  // namespace

json OllamaModelInfo(const format::GgufMetadata& metadata) {
  json info = json::object();
  for (const auto& [key, value] : metadata.values) info[key] = ValueJson(value);
  if (!info.contains("general.parameter_count")) {
    info["general.parameter_count"] = metadata.parameter_count;
  }
  return info;
}

std::string ParameterSize(uint64_t n) {
  char buf[32];
  const double d = static_cast<double>(n);
  auto whole = [](double x) { return x == std::floor(x); };
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof buf, whole(d / 1e9) ? "%.0fB" : "%.1fB", d / 1e9);
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof buf, whole(d / 1e6) ? "%.0fM" : "%.2fM", d / 1e6);
  } else if (n >= 1000ull) {
    std::snprintf(buf, sizeof buf, "%.0fK", d / 1e3);
  } else {
    return std::to_string(n);
  }
  return buf;
}

}  // namespace llmd::http
