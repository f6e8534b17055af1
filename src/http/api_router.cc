#include "http/api_router.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "common/log.h"
#include "http/json_reply.h"
#include "http/metrics_page.h"
#include "http/queue_page.h"

namespace llmd::http {
namespace {

// TCP peers with no known uid share one rate-limit bucket of their own.
constexpr uint32_t kUnidentifiedRateBucket = 0xFFFFFFFEu;

std::string RetryAfterSeconds(int64_t wait_ms) { return std::to_string(std::max<int64_t>(1, (wait_ms + 999) / 1000)); }

std::string OutcomeName(int status) {
  if (status == 0) return "client_gone";
  if (status < 300) return "ok";
  if (status == 401 || status == 403) return "denied";
  if (status == 429) return "rate_limited";
  if (status < 500) return "invalid";
  if (status == 503) return "busy";
  if (status == 504) return "timeout";
  return "error";
}

bool HostAllowed(const std::string& host, const std::vector<std::string>& allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    return a.size() == host.size() &&
           std::equal(a.begin(), a.end(), host.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
  });
}

int Send(Responder& out, const FrontEnd& front_end, const ApiError& e) {
  out.Send(e.status, kJsonType, front_end.ErrorBody(e), e.headers);
  return e.status;
}

}  // namespace

bool FrontEnd::HasKey(const Request& request, const std::string& key) const {
  return ConstantTimeEquals(request.header("authorization"), "Bearer " + key);
}

bool ConstantTimeEquals(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() != expected.size() ? 1 : 0;
  if (expected.empty()) return false;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

ApiError WrongMethod(const Request& req, const char* allow) {
  return {405, "invalid_request_error", "method_not_allowed",
          req.method + " is not allowed on " + req.path + "; use " + allow, {{"Allow", allow}}};
}

ApiError NoSuchEndpoint(const Request& req) {
  return {404, "invalid_request_error", "not_found", "no such endpoint: " + req.path, {}};
}

ApiRouter::ApiRouter(sched::ServerState& state, ApiOptions options) : state_(state), options_(std::move(options)) {}

void ApiRouter::Register(std::unique_ptr<FrontEnd> front_end) { front_ends_.push_back(std::move(front_end)); }

FrontEnd* ApiRouter::Owner(std::string_view path) const {
  if (front_ends_.empty()) return nullptr;
  for (size_t i = 1; i < front_ends_.size(); ++i) {
    if (front_ends_[i]->Claims(path)) return front_ends_[i].get();
  }
  return front_ends_.front()->Claims(path) ? front_ends_.front().get() : nullptr;
}

std::string ApiRouter::ErrorBody(std::string_view path, const ApiError& error) const {
  const FrontEnd* owner = Owner(path);
  return (owner != nullptr ? *owner : *front_ends_.front()).ErrorBody(error);
}

void ApiRouter::Handle(const Request& req, Responder& out) {
  FrontEnd* owner = Owner(req.path);
  FrontEnd& front_end = owner != nullptr ? *owner : *front_ends_.front();
  int status = 0;
  // The one place exceptions from the HTTP path stop (JSON, allocation): a 500, never a crash.
  try {
    status = Route(req, out, front_end, owner != nullptr);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "http_handler_exception", {{"path", req.path}, {"what", e.what()}});
    status = Send(out, front_end, {500, "server_error", "internal_error", "internal error", {}});
  }
  if (owner != nullptr) state_.requests().Count(owner->name(), OutcomeName(status));
}

std::optional<ApiError> ApiRouter::CheckTcpPeer(const Request& req, const FrontEnd& front_end) const {
  if (!HostAllowed(req.header("host"), options_.allowed_hosts)) {
    return ApiError{403, "permission_error", "host_not_allowed",
                    "the Host header is not an allowed name for this server (http_allowed_hosts)", {}};
  }
  // A browser page on another site sends its own Origin: refuse it (no CORS, ever).
  if (std::string origin = req.header("origin"); !origin.empty()) {
    const size_t scheme = origin.find("://");
    if (scheme == std::string::npos || !HostAllowed(origin.substr(scheme + 3), options_.allowed_hosts)) {
      return ApiError{403, "permission_error", "origin_not_allowed", "cross-origin requests are not allowed", {}};
    }
  }
  if (req.path == "/health") return std::nullopt;
  return CheckTcpCaller(req, front_end);
}

std::optional<ApiError> ApiRouter::CheckTcpCaller(const Request& req, const FrontEnd& front_end) const {
  if (!options_.api_key.empty()) {
    if (front_end.HasKey(req, options_.api_key)) return std::nullopt;
    return ApiError{401, "authentication_error", "invalid_api_key",
                    "a valid API key is required: Authorization: Bearer <key from api_key_file>",
                    {{"WWW-Authenticate", "Bearer"}}};
  }
  if (!req.peer.identified) {
    return ApiError{401, "authentication_error", "peer_unidentified",
                    "this connection's owner is not in the kernel's socket table (not a process of this host's "
                    "network), so its user cannot be told; use the Unix socket, or an API key (api_key_file)",
                    {}};
  }
  if (!req.peer.allowed) {
    return ApiError{403, "permission_error", "uid_not_allowed",
                    "uid " + std::to_string(req.peer.uid) + " may not use this API (allowed_uids, allowed_gids)", {}};
  }
  return std::nullopt;
}

std::optional<ApiError> ApiRouter::CheckCanServe(const Request& req) const {
  if (!state_.ready()) {
    return ApiErrorOf(UnavailableError("the model is still loading; retry shortly").WithReason(ErrorReason::kModelLoading));
  }
  if (state_.stopping()) return ApiErrorOf(sched::ShuttingDownError());
  const bool known = !req.peer.tcp || req.peer.identified;  // Unix-socket peers always are
  const uint32_t bucket = known ? req.peer.uid : kUnidentifiedRateBucket;
  if (int64_t wait_ms = state_.rate_limiter().Acquire(bucket); wait_ms > 0) {
    return ApiError{429, "rate_limit_error", "rate_limit_exceeded",
                    "rate limited, retry after " + std::to_string(wait_ms) + " ms",
                    {{"Retry-After", RetryAfterSeconds(wait_ms)}}};
  }
  return std::nullopt;
}

int ApiRouter::Health(const Request& req, Responder& out, const FrontEnd& front_end) {
  if (req.method != "GET") return Send(out, front_end, WrongMethod(req, "GET"));
  const bool ready = state_.ready() && !state_.stopping();
  const char* status = state_.stopping() ? "stopping" : (ready ? "ok" : "loading");
  out.Send(ready ? 200 : 503, kJsonType, Dump({{"status", status}}));
  return ready ? 200 : 503;
}

int ApiRouter::Metrics(const Request& req, Responder& out, const FrontEnd& front_end) {
  if (req.method != "GET") return Send(out, front_end, WrongMethod(req, "GET"));
  std::string page = RenderMetricsPage(state_);
  for (const auto& api : front_ends_) api->AppendMetrics(&page);
  out.Send(200, "text/plain; version=0.0.4; charset=utf-8", page);
  return 200;
}

int ApiRouter::Queue(const Request& req, Responder& out, const FrontEnd& front_end) {
  if (req.method != "GET") return Send(out, front_end, WrongMethod(req, "GET"));
  out.Send(200, kJsonType, RenderQueuePage(state_, req.peer));
  return 200;
}

int ApiRouter::Route(const Request& req, Responder& out, FrontEnd& front_end, bool claimed) {
  if (req.peer.tcp) {
    if (auto refusal = CheckTcpPeer(req, front_end)) return Send(out, front_end, *refusal);
  }
  if (req.path == "/health") return Health(req, out, front_end);
  if (req.path == "/metrics") return Metrics(req, out, front_end);
  if (req.path == "/queue") return Queue(req, out, front_end);
  if (!claimed) return Send(out, front_end, NoSuchEndpoint(req));
  if (auto refusal = CheckCanServe(req)) return Send(out, front_end, *refusal);
  if (state_.config()->log_text && req.method == "POST") {
    Log(LogLevel::kDebug, "http_request", {{"path", req.path}, {"body", req.body}});
  }
  return front_end.Handle(req, out);
}

}  // namespace llmd::http
