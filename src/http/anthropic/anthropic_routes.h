// AnthropicRoutes: Anthropic's Messages API on top of the engine workers: POST /v1/messages
// (whole or as Anthropic's named SSE events) and POST /v1/messages/count_tokens. Errors are
// Anthropic's {"type":"error","error":{"type","message"}} with the status ApiErrorOf maps
// the failure to.
//
// OpenAiRoutes dispatches every path under /v1/messages here after its Host, Origin, API key
// (Bearer or x-api-key), loading, stopping and rate-limit checks; nothing here repeats them.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `ctx` must
// outlive this.
#ifndef LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_
#define LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_

#include "http/anthropic/anthropic_api.h"
#include "http/http_server.h"
#include "sched/server_state.h"

namespace llmd::http {

struct ApiOptions;  // openai_routes.h, which may include this header

class AnthropicRoutes {
 public:
  // `options` is what OpenAiRoutes already applied (no field of it is needed here yet).
  AnthropicRoutes(sched::ServerState& ctx, const ApiOptions& options);
  // Any path under /v1/messages, after the Host/Origin/API-key (Bearer or x-api-key), loading,
  // stopping and rate-limit checks. Returns the HTTP status sent, 0 when the client left first.
  int Handle(const Request& request, Responder& out);

 private:
  int Messages(const Request& request, Responder& out, AnthropicRequest& parsed);
  int CountTokens(Responder& out, AnthropicRequest& parsed);

  sched::ServerState& ctx_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_
