#include "http/anthropic/anthropic_routes.h"

#include <utility>

#include "http/anthropic/anthropic_sink.h"
#include "http/exchange.h"
#include "http/json_reply.h"

namespace llmd::http {

bool AnthropicRoutes::HasKey(const Request& req, const std::string& key) const {
  return FrontEnd::HasKey(req, key) || ConstantTimeEquals(req.header("x-api-key"), key);
}

int AnthropicRoutes::Handle(const Request& req, Responder& out) {
  const bool messages = req.path == "/v1/messages", count = req.path == "/v1/messages/count_tokens";
  if (!messages && !count) return SendError(out, NoSuchEndpoint(req), AnthropicErrorBody);
  if (req.method != "POST") return SendError(out, WrongMethod(req, "POST"), AnthropicErrorBody);
  auto parsed = ParseAnthropicRequest(req.body, count ? AnthropicBody::kCountTokens : AnthropicBody::kMessages);
  if (!parsed.has_value()) return SendError(out, ApiErrorOf(parsed.error()), AnthropicErrorBody);
  const ExchangeEnv env = ServerEnv(state_, req, out);
  if (count) {
    // The prompt as the model would see it (template, tools, the configured system prompt),
    // counted by the worker that would run it: nothing is decoded.
    TokenCountSink sink(out);
    return RunExchange(std::move(*parsed), {"anthropic", "toolu_", false, /*count_only=*/true}, sink, env);
  }
  const MessageContext context{NewId("msg_"), parsed->model.value_or(""), parsed->omit_thinking};
  AnthropicSink sink(out, context, parsed->stream);
  return RunExchange(std::move(*parsed), {"anthropic", "toolu_", /*stop_sequence=*/true}, sink, env);
}

}  // namespace llmd::http
