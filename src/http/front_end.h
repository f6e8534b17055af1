// FrontEnd: one API on the daemon's HTTP sockets (OpenAI, Responses, Anthropic, Ollama, ...),
// as the ApiRouter (api_router.h) sees it: which paths are its own, how its errors look, its
// name in metrics, how its clients send the API key, and its handler. The router does what
// every API shares (Host and Origin, the key, /health and /metrics, readiness, the rate
// limit); a front end only routes its own paths, each a parser plus a sink over RunExchange
// (exchange.h) when it generates.
//
// Thread-safety: Handle may run on many connection threads at once; the rest is const.
#ifndef LLMD_HTTP_FRONT_END_H_
#define LLMD_HTTP_FRONT_END_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/api_error.h"
#include "http/http_server.h"

namespace llmd::http {

// What the daemon tells every front end about itself.
struct ApiOptions {
  std::string api_key;                     // required from TCP peers; empty: TCP peers need an allowed UID
  std::vector<std::string> allowed_hosts;  // Host header values TCP peers may send
  int64_t started_unix = 0;                // when the daemon started (models' "created")
};

class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  // Its label in metrics (llmd_requests_total{api}) and logs: "openai", "ollama", ...
  virtual const char* name() const = 0;
  // Whether `path` belongs to this API: its errors take this API's shape, also a 404 for a
  // path it does not serve, and the over-capacity 503.
  virtual bool Claims(std::string_view path) const = 0;
  // An error as this API's clients read it (the JSON body; the status is the error's).
  virtual std::string ErrorBody(const ApiError& error) const = 0;
  // Whether `request` carries the API key as this API's clients send it. Default:
  // "Authorization: Bearer KEY" (OpenAI and Ollama clients).
  virtual bool HasKey(const Request& request, const std::string& key) const;
  // A request for one of its paths, after the router's checks. Returns the HTTP status sent,
  // 0 when the client left first.
  virtual int Handle(const Request& request, Responder& out) = 0;
  // Its own /metrics families, appended to the page (Prometheus text). Default: none.
  virtual void AppendMetrics(std::string* /*page*/) const {}
};

// Constant-time comparison (its time depends only on the length of `given`).
bool ConstantTimeEquals(const std::string& given, const std::string& expected);

// A 405 naming the method that would do.
ApiError WrongMethod(const Request& request, const char* allow);
// A 404 for a path no handler serves.
ApiError NoSuchEndpoint(const Request& request);

}  // namespace llmd::http

#endif  // LLMD_HTTP_FRONT_END_H_
