// ApiRouter: the daemon's HTTP application. It does the checks every API shares, in order:
// a TCP peer must send an allowed Host (against DNS rebinding), no foreign Origin (no CORS,
// ever) and, except for /health, the API key when there is one, or else be identified (the
// kernel's socket table names its UID) and allowed by the UID/GID allowlist; then /health and
// /metrics are answered; then
// the models must be loaded and the daemon not stopping, and the peer within its rate limit.
// What passes goes to the front end that claims the path (front_end.h). The first registered
// is the default: it is asked last, so it may claim a wide prefix ("/v1/") that others refine,
// and a path none claims is a 404 in its shape. Every refusal and error comes in the shape of the API the path belongs to,
// including the server's own (the over-capacity 503) through ErrorBody, and an exception from
// a handler, which stops here as a 500.
//
// Unix socket peers were already admitted by their credentials (SO_PEERCRED).
//
// Thread-safety: Register before serving; Handle and ErrorBody from any thread. Lifetime:
// `state` must outlive this.
#ifndef LLMD_HTTP_API_ROUTER_H_
#define LLMD_HTTP_API_ROUTER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/front_end.h"
#include "http/http_server.h"
#include "sched/server_state.h"

namespace llmd::http {

class ApiRouter {
 public:
  ApiRouter(sched::ServerState& state, ApiOptions options);

  // The first registered is the default front end. Register at least one before Handle.
  void Register(std::unique_ptr<FrontEnd> front_end);
  // One request, answered (never throws). Counts it in llmd_requests_total{api, outcome}.
  void Handle(const Request& request, Responder& out);
  // `error` in the shape of the API `path` belongs to ("" or unknown: the default's).
  std::string ErrorBody(std::string_view path, const ApiError& error) const;

 private:
  // Returns the HTTP status sent, 0 when the client left first.
  int Route(const Request& request, Responder& out, FrontEnd& front_end, bool claimed);
  // The refusal of a TCP peer (Host, Origin, then CheckTcpCaller), if any.
  std::optional<ApiError> CheckTcpPeer(const Request& request, const FrontEnd& front_end) const;
  // The refusal of a TCP caller who may not use the API: no right key when there is one; with
  // none, an unidentified peer (401) or a UID the allowlist refuses (403).
  std::optional<ApiError> CheckTcpCaller(const Request& request, const FrontEnd& front_end) const;
  // The refusal of a request the daemon cannot take now (loading, stopping, rate), if any.
  std::optional<ApiError> CheckCanServe(const Request& request) const;
  int Health(const Request& request, Responder& out, const FrontEnd& front_end);
  int Metrics(const Request& request, Responder& out, const FrontEnd& front_end);
  int Queue(const Request& request, Responder& out, const FrontEnd& front_end);
  // The front end that claims `path`; null when none does.
  FrontEnd* Owner(std::string_view path) const;

  sched::ServerState& state_;
  const ApiOptions options_;
  std::vector<std::unique_ptr<FrontEnd>> front_ends_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_API_ROUTER_H_
