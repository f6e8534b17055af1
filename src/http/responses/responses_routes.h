// ResponsesRoutes: the OpenAI Responses API's front end: /v1/responses (stateless: the whole
// input comes with every request), one Response object or its SSE events (ResponsesSink).
// Errors are OpenAI's error JSON.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `state` must
// outlive this.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_

#include <string>
#include <string_view>

#include "http/front_end.h"
#include "http/openai/openai_render.h"
#include "sched/server_state.h"

namespace llmd::http {

class ResponsesRoutes final : public FrontEnd {
 public:
  explicit ResponsesRoutes(sched::ServerState& state) : state_(state) {}

  const char* name() const override { return "responses"; }
  bool Claims(std::string_view path) const override { return path == "/v1/responses"; }
  std::string ErrorBody(const ApiError& error) const override { return OpenAiErrorBody(error); }
  int Handle(const Request& request, Responder& out) override;

 private:
  sched::ServerState& state_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_
