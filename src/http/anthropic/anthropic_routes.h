// AnthropicRoutes: Anthropic's Messages API's front end: POST /v1/messages (a Message, or
// Anthropic's named SSE events: AnthropicSink) and POST /v1/messages/count_tokens. Errors are
// Anthropic's {"type":"error","error":{"type","message"}} with the status ApiErrorOf maps the
// failure to. Its clients send the API key as "x-api-key: KEY" (or Bearer).
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `state` must
// outlive this.
#ifndef LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_
#define LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_

#include <string>
#include <string_view>

#include "http/anthropic/anthropic_api.h"
#include "http/front_end.h"
#include "sched/server_state.h"

namespace llmd::http {

class AnthropicRoutes final : public FrontEnd {
 public:
  explicit AnthropicRoutes(sched::ServerState& state) : state_(state) {}

  const char* name() const override { return "anthropic"; }
  bool Claims(std::string_view path) const override { return path.starts_with("/v1/messages"); }
  std::string ErrorBody(const ApiError& error) const override { return AnthropicErrorBody(error); }
  bool HasKey(const Request& request, const std::string& key) const override;
  int Handle(const Request& request, Responder& out) override;

 private:
  sched::ServerState& state_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_ANTHROPIC_ANTHROPIC_ROUTES_H_
