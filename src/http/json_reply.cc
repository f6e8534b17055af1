#include "http/json_reply.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>

namespace llmd::http {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int SendError(Responder& out, const ApiError& e, ErrorFormat format) {
  out.Send(e.status, kJsonType, format(e), e.headers);
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
