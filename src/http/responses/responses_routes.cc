#include "http/responses/responses_routes.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/log.h"
#include "http/exchange.h"
#include "http/json_reply.h"
#include "http/overflow_fields.h"
#include "http/responses/response_input_items.h"
#include "http/responses/response_owner.h"
#include "http/responses/responses_api.h"
#include "http/responses/responses_sink.h"

namespace llmd::http {
namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "/v1/responses/";

// OpenAI's 404 for a response that is not there, or not the caller's: the same words either
// way, so that a stranger learns nothing about another owner's ids.
ApiError NoSuchResponse(const std::string& id) {
  return {404, "invalid_request_error", "not_found", "Response with id '" + id + "' not found.", {}};
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The request's echo with `key` set to what happened (the echo keeps its field order).
std::string EchoWith(const std::string& echo_json, const char* key, const nlohmann::ordered_json& value) {
  nlohmann::ordered_json echo = nlohmann::ordered_json::parse(echo_json, nullptr, /*allow_exceptions=*/false);
  if (!echo.is_object()) return echo_json;
  echo[key] = value;
  return echo.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string ResponsesRoutes::Owner(const Request& req) const {
  const bool key_used = !options_.api_key.empty() && HasKey(req, options_.api_key);
  return ResponseOwner(req.peer, key_used, options_.api_key);
}

int ResponsesRoutes::Handle(const Request& req, Responder& out) {
  if (req.path == "/v1/responses") {
    if (req.method != "POST") return SendError(out, WrongMethod(req, "POST"), OpenAiErrorBody);
    return Create(req, out);
  }
  const std::string rest(std::string_view(req.path).substr(kPrefix.size()));
  const size_t slash = rest.find('/');
  if (slash != std::string::npos && slash > 0 && rest.substr(slash) == "/input_items") {
    if (req.method != "GET") return SendError(out, WrongMethod(req, "GET"), OpenAiErrorBody);
    return InputItems(req, out, rest.substr(0, slash));
  }
  if (rest.empty() || slash != std::string::npos) return SendError(out, NoSuchEndpoint(req), OpenAiErrorBody);
  if (req.method == "GET") return Retrieve(req, out, rest);
  if (req.method == "DELETE") return Delete(req, out, rest);
  return SendError(out, WrongMethod(req, "GET, DELETE"), OpenAiErrorBody);
}

int ResponsesRoutes::Create(const Request& req, Responder& out) {
  const std::string owner = Owner(req);
  const PreviousResponseLookup previous = [&](const std::string& id) -> Result<std::string> {
    std::optional<StoredResponse> stored;
    if (IsValidResponseId(id)) stored = store_->Get(id, owner);
    if (!stored) return NotFoundError("Previous response with id '" + id + "' not found.");
    return std::move(stored->items_json);
  };
  auto parsed = ParseResponsesRequest(req.body, previous);
  if (!parsed.has_value()) {
    if (parsed.error().code() == StatusCode::kNotFound) {
      return SendError(out,
                       {404, "invalid_request_error", "previous_response_not_found", parsed.error().message(), {},
                        "previous_response_id"},
                       OpenAiErrorBody);
    }
    return SendError(out, ApiErrorOf(parsed.error()), OpenAiErrorBody);
  }
  // The Response says what happened: "store" false when the store is off or the caller
  // unknown; "truncation" "auto" when no truncation was sent and X-Llmd-Overflow asked for it.
  const bool store = parsed->store && store_->enabled() && !owner.empty();
  std::string echo = parsed->store == store ? parsed->echo_json : EchoWith(parsed->echo_json, "store", store);
  if (!parsed->overflow) {
    auto header = OverflowHeader(req.header(kOverflowHeader));
    if (!header.has_value()) return SendError(out, ApiErrorOf(header.error()), OpenAiErrorBody);
    parsed->overflow = *header;
    if (parsed->overflow == engine::ContextOverflow::kDropOldest) echo = EchoWith(echo, "truncation", "auto");
  }
  ExchangeEnv env = ServerEnv(state_, req, out);
  ResponseContext context{NewId("resp_"), static_cast<int64_t>(std::time(nullptr)),
                          parsed->model.value_or(env.default_model), std::move(echo)};
  ResponsesSink::Storage storage;
  if (store) {
    storage.keep = [this, owner, id = context.id, items = std::move(parsed->items_json)](const std::string& response) {
      // The conversation a follow-up continues: this request's, then the reply's output items.
      // Items keep their field order, as the client and the Response wrote them.
      using ordered = nlohmann::ordered_json;
      ordered conversation = ordered::parse(items, nullptr, /*allow_exceptions=*/false);
      const ordered object = ordered::parse(response, nullptr, /*allow_exceptions=*/false);
      if (!conversation.is_array() || !object.is_object() || !object.contains("output")) return;
      for (const ordered& item : object["output"]) conversation.push_back(item);
      AssignItemIds(&conversation, id);  // input_items lists them by id; a follow-up keeps them
      StoredResponse stored{id, owner, NowUnixMs(), response,
                            conversation.dump(-1, ' ', false, ordered::error_handler_t::replace)};
      if (Status s = store_->Put(std::move(stored)); !s.ok()) {
        Log(LogLevel::kWarn, "response_store_error", {{"id", id}, {"reason", s.message()}});
      }
    };
    storage.drop = [this, owner, id = context.id] { store_->Erase(id, owner); };
  }
  ResponsesSink sink(out, std::move(context), parsed->stream, std::move(storage));
  return RunExchange(std::move(*parsed), ExchangeOptions{"responses", "call_"}, sink, env);
}

int ResponsesRoutes::Retrieve(const Request& req, Responder& out, const std::string& id) {
  if (Status s = CheckRetrieveQuery(req.query); !s.ok()) return SendError(out, ApiErrorOf(s), OpenAiErrorBody);
  std::optional<StoredResponse> stored;
  if (IsValidResponseId(id)) stored = store_->Get(id, Owner(req));
  if (!stored) return SendError(out, NoSuchResponse(id), OpenAiErrorBody);
  return out.Send(200, kJsonType, stored->response_json) ? 200 : 0;
}

int ResponsesRoutes::InputItems(const Request& req, Responder& out, const std::string& id) {
  auto page = ParseInputItemsQuery(req.query);
  if (!page.has_value()) return SendError(out, ApiErrorOf(page.error()), OpenAiErrorBody);
  std::optional<StoredResponse> stored;
  if (IsValidResponseId(id)) stored = store_->Get(id, Owner(req));
  if (!stored) return SendError(out, NoSuchResponse(id), OpenAiErrorBody);
  auto list = RenderInputItems(*stored, *page);
  if (!list.has_value()) return SendError(out, ApiErrorOf(list.error()), OpenAiErrorBody);
  return out.Send(200, kJsonType, *list) ? 200 : 0;
}

int ResponsesRoutes::Delete(const Request& req, Responder& out, const std::string& id) {
  if (!IsValidResponseId(id) || !store_->Erase(id, Owner(req))) {
    return SendError(out, NoSuchResponse(id), OpenAiErrorBody);
  }
  return out.Send(200, kJsonType, Dump({{"id", id}, {"object", "response"}, {"deleted", true}})) ? 200 : 0;
}

void ResponsesRoutes::AppendMetrics(std::string* page) const {
  const ResponseStore::Totals totals = store_->totals();
  *page += "# HELP llmd_stored_responses Responses kept for GET /v1/responses/{id} and previous_response_id.\n"
           "# TYPE llmd_stored_responses gauge\n"
           "llmd_stored_responses " + std::to_string(totals.count) + "\n" +
           "# HELP llmd_stored_response_bytes Bytes the stored responses hold (objects and conversations).\n"
           "# TYPE llmd_stored_response_bytes gauge\n"
           "llmd_stored_response_bytes " + std::to_string(totals.bytes) + "\n" +
           "# HELP llmd_stored_responses_limit The most responses kept (responses_max_stored); 0: storing is off.\n"
           "# TYPE llmd_stored_responses_limit gauge\n"
           "llmd_stored_responses_limit " + std::to_string(store_->options().max_responses) + "\n" +
           "# HELP llmd_stored_response_bytes_limit The most bytes kept (responses_max_mb).\n"
           "# TYPE llmd_stored_response_bytes_limit gauge\n"
           "llmd_stored_response_bytes_limit " + std::to_string(store_->options().max_bytes) + "\n" +
           "# HELP llmd_stored_response_ttl_seconds How long a stored response is kept (responses_ttl).\n"
           "# TYPE llmd_stored_response_ttl_seconds gauge\n"
           "llmd_stored_response_ttl_seconds " + std::to_string(store_->options().ttl_ms / 1000) + "\n";
}

}  // namespace llmd::http
