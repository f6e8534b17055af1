#include "http/responses/responses_routes.h"

#include <ctime>
#include <utility>

#include "http/exchange.h"
#include "http/json_reply.h"
#include "http/responses/responses_api.h"
#include "http/responses/responses_sink.h"

namespace llmd::http {

int ResponsesRoutes::Handle(const Request& req, Responder& out) {
  if (req.method != "POST") return SendError(out, WrongMethod(req, "POST"), OpenAiErrorBody);
  auto parsed = ParseResponsesRequest(req.body);
  if (!parsed.has_value()) return SendError(out, ApiErrorOf(parsed.error()), OpenAiErrorBody);
  ExchangeEnv env = ServerEnv(state_, req, out);
  ResponseContext context{NewId("resp_"), static_cast<int64_t>(std::time(nullptr)),
                          parsed->model.value_or(env.default_model), parsed->echo_json};
  ResponsesSink sink(out, std::move(context), parsed->stream);
  return RunExchange(std::move(*parsed), ExchangeOptions{"responses", "call_"}, sink, env);
}

}  // namespace llmd::http
