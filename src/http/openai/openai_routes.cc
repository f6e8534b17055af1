#include "http/openai/openai_routes.h"

#include <climits>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/utf8.h"
#include "http/exchange.h"
#include "http/json_reply.h"
#include "http/openai/embeddings_api.h"
#include "http/openai/openai_request.h"
#include "http/openai/openai_sink.h"

namespace llmd::http {
namespace {

using nlohmann::json;

int Fail(Responder& out, const ApiError& e) { return SendError(out, e, OpenAiErrorBody); }
int Fail(Responder& out, const Status& s) { return Fail(out, ApiErrorOf(s)); }

// A tokenizer request's body: a JSON object, and the worker of the model it names (loaded
// first if it is not, and held while the reply is made).
Result<std::pair<json, sched::WorkerRef>> TokenizerBody(const Request& req, sched::ServerState& state) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return InvalidArgumentError("the request body must be a JSON object");
  std::optional<std::string> model;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) return InvalidArgumentError("'model' must be a string");
    model = body["model"].get<std::string>();
  }
  LLMD_ASSIGN_OR_RETURN(sched::WorkerRef worker,
                        state.Acquire(model, state.config()->request_timeout_ms, std::nullopt));
  return std::make_pair(std::move(body), std::move(worker));
}

// An optional boolean field; false when present and not a boolean.
bool ReadFlag(const json& body, const char* key, bool fallback, bool* value) {
  *value = fallback;
  if (!body.contains(key) || body[key].is_null()) return true;
  if (!body[key].is_boolean()) return false;
  *value = body[key].get<bool>();
  return true;
}

}  // namespace

OpenAiRoutes::OpenAiRoutes(sched::ServerState& state, const ApiOptions& options)
    : state_(state), started_unix_(options.started_unix) {}

bool OpenAiRoutes::Claims(std::string_view path) const {
  return path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize";
}

int OpenAiRoutes::Handle(const Request& req, Responder& out) {
  const std::string& p = req.path;
  if (p == "/v1/models") return req.method == "GET" ? Models(out) : Fail(out, WrongMethod(req, "GET"));
  const bool chat = p == "/v1/chat/completions", completions = p == "/v1/completions";
  if (!chat && !completions && p != "/tokenize" && p != "/detokenize" && p != "/v1/embeddings") {
    return Fail(out, NoSuchEndpoint(req));
  }
  if (req.method != "POST") return Fail(out, WrongMethod(req, "POST"));
  if (p == "/tokenize") return Tokenize(req, out);
  if (p == "/detokenize") return Detokenize(req, out);
  if (p == "/v1/embeddings") return Embeddings(req, out);
  return Generate(req, out, chat);
}

int OpenAiRoutes::Generate(const Request& req, Responder& out, bool chat) {
  auto parsed = chat ? ParseChatRequest(req.body) : ParseCompletionRequest(req.body);
  if (!parsed.has_value()) return Fail(out, parsed.error());
  ExchangeEnv env = ServerEnv(state_, req, out);
  OpenAiReplyContext context;
  context.chat = chat;
  context.id = NewId(chat ? "chatcmpl-" : "cmpl-");
  context.created = static_cast<int64_t>(std::time(nullptr));
  context.model = parsed->model.value_or(env.default_model);
  context.n = parsed->n;
  context.stream = parsed->stream;
  context.include_usage = parsed->include_usage;
  context.logprobs = parsed->top_logprobs >= 0;
  OpenAiSink sink(out, std::move(context));
  return RunExchange(std::move(*parsed), ExchangeOptions{"openai", "call_"}, sink, env);
}

// llama-server's /tokenize {content, add_special=false, parse_special=true, with_pieces=false}
// -> {tokens}, with the model's own vocabulary.
int OpenAiRoutes::Tokenize(const Request& req, Responder& out) {
  auto parsed = TokenizerBody(req, state_);
  if (!parsed.has_value()) return Fail(out, parsed.error());
  auto& [body, worker] = *parsed;
  bool add_special = false, parse_special = true, with_pieces = false;
  if (!body.contains("content") || !body["content"].is_string()) {
    return Fail(out, InvalidArgumentError("'content' must be a string"));
  }
  if (!ReadFlag(body, "add_special", false, &add_special) || !ReadFlag(body, "parse_special", true, &parse_special) ||
      !ReadFlag(body, "with_pieces", false, &with_pieces)) {
    return Fail(out, InvalidArgumentError("'add_special', 'parse_special' and 'with_pieces' must be true or false"));
  }
  const std::string content = body["content"].get<std::string>();
  if (!IsValidUtf8(content)) return Fail(out, InvalidArgumentError("'content' is not valid UTF-8"));
  auto tokens = worker->Tokenize(content, add_special, parse_special);
  if (!tokens.has_value()) return Fail(out, tokens.error());
  json list = json::array();
  for (engine::TokenId t : *tokens) {
    if (!with_pieces) {
      list.push_back(t);
      continue;
    }
    auto piece = worker->Detokenize({t}, /*render_special=*/true);
    list.push_back({{"id", t}, {"piece", piece.has_value() ? *piece : std::string()}});
  }
  return out.Send(200, kJsonType, Dump({{"tokens", list}})) ? 200 : 0;
}

// llama-server's /detokenize {tokens} -> {content}.
int OpenAiRoutes::Detokenize(const Request& req, Responder& out) {
  auto parsed = TokenizerBody(req, state_);
  if (!parsed.has_value()) return Fail(out, parsed.error());
  auto& [body, worker] = *parsed;
  const Status bad = InvalidArgumentError("'tokens' must be an array of token ids");
  if (!body.contains("tokens") || !body["tokens"].is_array()) return Fail(out, bad);
  std::vector<engine::TokenId> tokens;
  for (const json& t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) return Fail(out, bad);
    tokens.push_back(static_cast<engine::TokenId>(t.get<int64_t>()));
  }
  auto text = worker->Detokenize(tokens, /*render_special=*/true);
  if (!text.has_value()) return Fail(out, text.error());
  return out.Send(200, kJsonType, Dump({{"content", *text}})) ? 200 : 0;
}

int OpenAiRoutes::Embeddings(const Request& req, Responder& out) {
  auto parsed = ParseEmbeddingsRequest(req.body);
  if (!parsed.has_value()) return Fail(out, parsed.error());
  const ExchangeEnv env = ServerEnv(state_, req, out);
  const std::string model = parsed->model.value_or(env.default_model);
  Embedded done = RunEmbeddings({parsed->model, std::move(parsed->inputs), parsed->dimensions, std::nullopt, std::nullopt}, "openai", env);
  if (done.client_gone) return 0;
  if (!done.error.ok()) return Fail(out, done.error);
  return out.Send(200, kJsonType, RenderEmbeddings(done.vectors, parsed->base64, model, done.prompt_tokens)) ? 200 : 0;
}

int OpenAiRoutes::Models(Responder& out) {
  json data = json::array();
  // Every model that can be served: a request naming one that is not loaded loads it.
  for (const auto& m : state_.available()) {
    data.push_back({{"id", m.name}, {"object", "model"}, {"created", started_unix_}, {"owned_by", "llmd"}});
  }
  return out.Send(200, kJsonType, Dump({{"object", "list"}, {"data", data}})) ? 200 : 0;
}

}  // namespace llmd::http
