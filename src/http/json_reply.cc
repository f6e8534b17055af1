#include "http/json_reply.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>

namespace llmd::http {
namespace {

using nlohmann::json;

// Anthropic's error types by HTTP status (its documented set).
const char* AnthropicType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return "api_error";
  }
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ErrorShape ErrorShapeFor(const std::string& path) {
  if (path.starts_with("/api/") || path == "/api") return ErrorShape::kOllama;
  if (path.starts_with("/v1/messages")) return ErrorShape::kAnthropic;
  return ErrorShape::kOpenAi;
}

std::string ErrorBody(const ApiError& e, ErrorShape shape) {
  switch (shape) {
    case ErrorShape::kOllama:
      return Dump({{"error", e.message}});
    case ErrorShape::kAnthropic:
      return Dump({{"type", "error"}, {"error", {{"type", AnthropicType(e.status)}, {"message", e.message}}}});
    case ErrorShape::kOpenAi:
      break;
  }
  const json param = e.param != nullptr ? json(e.param) : json(nullptr);
  return Dump({{"error", {{"message", e.message}, {"type", e.type}, {"param", param}, {"code", e.code}}}});
}

int SendError(Responder& out, const ApiError& e, ErrorShape shape) {
  out.Send(e.status, kJsonType, ErrorBody(e, shape), e.headers);
  return e.status;
}

std::string NewId(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return prefix + std::string(buf);
}

nlohmann::json SerializeFloat(float f) {
  if (!std::isfinite(f)) return nullptr;
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  if (ec != std::errc()) return nlohmann::json(f);
  return nlohmann::json(std::strtod(std::string(buf, end).c_str(), nullptr));
}

}  // namespace llmd::http
