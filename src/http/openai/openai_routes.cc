#include "http/openai/openai_routes.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/utf8.h"
#include "http/anthropic/anthropic_routes.h"
#include "http/openai/embeddings_api.h"
#include "http/generation.h"
#include "http/json_reply.h"
#include "http/metrics_page.h"
#include "http/ollama/ollama_routes.h"
#include "http/api_error.h"
#include "http/openai/openai_render.h"
#include "http/openai/openai_request.h"
#include "http/reply_deltas.h"
#include "http/responses/responses_api.h"
#include "http/sse_writer.h"
#include "sched/request_runner.h"

namespace llmd::http {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";
// TCP peers have no uid: they share one rate-limit bucket of their own.
constexpr uint32_t kTcpRateBucket = 0xFFFFFFFEu;

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

const char* FinishName(engine::FinishReason r) { return r == engine::FinishReason::kLength ? "length" : "stop"; }

bool HostAllowed(const std::string& host, const std::vector<std::string>& allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    return a.size() == host.size() &&
           std::equal(a.begin(), a.end(), host.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
  });
}

}  // namespace

bool ConstantTimeEquals(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() != expected.size() ? 1 : 0;
  if (expected.empty()) return false;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

OpenAiRoutes::OpenAiRoutes(sched::ServerState& ctx, ApiOptions options)
    : ctx_(ctx), options_(std::move(options)), anthropic_(std::make_unique<AnthropicRoutes>(ctx_, options_)),
      ollama_(std::make_unique<OllamaRoutes>(ctx_, options_)) {}

OpenAiRoutes::~OpenAiRoutes() = default;

void OpenAiRoutes::Handle(const Request& request, Responder& out) {
  const int status = Route(request, out);
  if (request.path.starts_with("/v1/messages")) ctx_.requests().Count("anthropic", OutcomeName(status));
  else if (request.path.starts_with("/api/")) ctx_.requests().Count("ollama", OutcomeName(status));
  else if (request.path.starts_with("/v1/")) ctx_.requests().Count("http", OutcomeName(status));
}

int OpenAiRoutes::Route(const Request& req, Responder& out) {
  // Refusals come in the shape of the API the path belongs to, so each client can read them.
  const ErrorShape shape = ErrorShapeFor(req.path);
  auto fail = [&](const ApiError& e) { return SendError(out, e, shape); };
  if (req.peer.tcp) {
    if (!HostAllowed(req.header("host"), options_.allowed_hosts)) {
      return fail({403, "permission_error", "host_not_allowed",
                             "the Host header is not an allowed name for this server (http_allowed_hosts)", {}});
    }
    // A browser page on another site sends its own Origin: refuse it (no CORS, ever).
    if (std::string origin = req.header("origin"); !origin.empty()) {
      const size_t scheme = origin.find("://");
      if (scheme == std::string::npos || !HostAllowed(origin.substr(scheme + 3), options_.allowed_hosts)) {
        return fail({403, "permission_error", "origin_not_allowed",
                               "cross-origin requests are not allowed", {}});
      }
    }
    // OpenAI and Ollama clients send "Authorization: Bearer KEY", Anthropic's "x-api-key: KEY".
    const bool key_ok = ConstantTimeEquals(req.header("authorization"), "Bearer " + options_.api_key) ||
                        (shape == ErrorShape::kAnthropic && ConstantTimeEquals(req.header("x-api-key"), options_.api_key));
    if (req.path != "/health" && !key_ok) {
      return fail({401, "authentication_error", "invalid_api_key",
                             "a valid API key is required: Authorization: Bearer <key from api_key_file>",
                             {{"WWW-Authenticate", "Bearer"}}});
    }
  }
  auto method_is = [&](const char* m) { return req.method == m; };
  auto wrong_method = [&](const char* allow) {
    return fail({405, "invalid_request_error", "method_not_allowed",
                           req.method + " is not allowed on " + req.path + "; use " + allow, {{"Allow", allow}}});
  };
  if (req.path == "/health") {
    if (!method_is("GET")) return wrong_method("GET");
    const bool ready = ctx_.ready() && !ctx_.stopping();
    const char* state = ctx_.stopping() ? "stopping" : (ready ? "ok" : "loading");
    out.Send(ready ? 200 : 503, kJson, Dump({{"status", state}}));
    return ready ? 200 : 503;
  }
  if (req.path == "/metrics") {
    if (!method_is("GET")) return wrong_method("GET");
    out.Send(200, "text/plain; version=0.0.4; charset=utf-8", RenderMetricsPage(ctx_));
    return 200;
  }
  const bool models = req.path == "/v1/models", chat = req.path == "/v1/chat/completions",
             completions = req.path == "/v1/completions", tokenize = req.path == "/tokenize",
             detokenize = req.path == "/detokenize", embeddings = req.path == "/v1/embeddings",
             responses = req.path == "/v1/responses";
  if (shape == ErrorShape::kOpenAi) {  // the other APIs' handlers check their own paths
    if (!models && !chat && !completions && !tokenize && !detokenize && !embeddings && !responses) {
      return fail({404, "invalid_request_error", "not_found", "no such endpoint: " + req.path, {}});
    }
    if (models && !method_is("GET")) return wrong_method("GET");
    if (!models && !method_is("POST")) return wrong_method("POST");
  }
  if (!ctx_.ready()) {
    return fail(ApiErrorOf(UnavailableError("the model is still loading; retry shortly")
                                .WithReason(ErrorReason::kModelLoading)));
  }
  if (ctx_.stopping()) return fail(ApiErrorOf(sched::ShuttingDownError()));
  const uint32_t bucket = req.peer.tcp ? kTcpRateBucket : req.peer.uid;
  if (int64_t wait_ms = ctx_.rate_limiter().Acquire(bucket); wait_ms > 0) {
    return fail({429, "rate_limit_error", "rate_limit_exceeded",
                           "rate limited, retry after " + std::to_string(wait_ms) + " ms",
                           {{"Retry-After", RetryAfterSeconds(wait_ms)}}});
  }
  if (shape == ErrorShape::kAnthropic) return anthropic_->Handle(req, out);
  if (shape == ErrorShape::kOllama) return ollama_->Handle(req, out);
  if (shape != ErrorShape::kOpenAi) return fail({404, "invalid_request_error", "not_found", "no such endpoint: " + req.path, {}});
  if (tokenize || detokenize) return Tokenizer(req, out, tokenize);
  if (embeddings) return Embeddings(req, out);
  if (responses) return Responses(req, out);
  if (models) {
    json data = json::array();
    for (const auto& [name, w] : ctx_.models()) {
      data.push_back({{"id", name}, {"object", "model"}, {"created", options_.started_unix}, {"owned_by", "llmd"}});
    }
    out.Send(200, kJson, Dump({{"object", "list"}, {"data", data}}));
    return 200;
  }
  return Generate(req, out, chat);
}

// llama-server's /tokenize {content, add_special=false, parse_special=true, with_pieces=false}
// -> {tokens} and /detokenize {tokens} -> {content}, with the model's own vocabulary.
int OpenAiRoutes::Tokenizer(const Request& req, Responder& out, bool tokenize) {
  auto bad = [&](const std::string& message) {
    return SendError(out, ApiErrorOf(InvalidArgumentError(message)));
  };
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) return bad("the request body must be a JSON object");
  std::optional<std::string> model;
  if (body.contains("model") && !body["model"].is_null()) {
    if (!body["model"].is_string()) return bad("'model' must be a string");
    model = body["model"].get<std::string>();
  }
  sched::EngineWorker* worker = ctx_.WorkerFor(model);
  if (worker == nullptr) {
    return SendError(out, ApiErrorOf(NotFoundError("unknown model '" + model.value_or("") + "'; loaded: " +
                                                    ctx_.ModelNames())
                                          .WithReason(ErrorReason::kUnknownModel)));
  }
  auto flag = [&](const char* key, bool fallback, bool* value) {
    *value = fallback;
    if (!body.contains(key) || body[key].is_null()) return true;
    if (!body[key].is_boolean()) return false;
    *value = body[key].get<bool>();
    return true;
  };
  if (tokenize) {
    bool add_special = false, parse_special = true, with_pieces = false;
    if (!body.contains("content") || !body["content"].is_string()) return bad("'content' must be a string");
    if (!flag("add_special", false, &add_special) || !flag("parse_special", true, &parse_special) ||
        !flag("with_pieces", false, &with_pieces)) {
      return bad("'add_special', 'parse_special' and 'with_pieces' must be true or false");
    }
    const std::string content = body["content"].get<std::string>();
    if (!IsValidUtf8(content)) return bad("'content' is not valid UTF-8");
    auto tokens = worker->Tokenize(content, add_special, parse_special);
    if (!tokens.has_value()) return SendError(out, ApiErrorOf(tokens.error()));
    json list = json::array();
    for (engine::TokenId t : *tokens) {
      if (!with_pieces) {
        list.push_back(t);
        continue;
      }
      auto piece = worker->Detokenize({t}, /*render_special=*/true);
      list.push_back({{"id", t}, {"piece", piece.has_value() ? *piece : std::string()}});
    }
    out.Send(200, kJson, Dump({{"tokens", list}}));
    return 200;
  }
  if (!body.contains("tokens") || !body["tokens"].is_array()) return bad("'tokens' must be an array of token ids");
  std::vector<engine::TokenId> tokens;
  for (const json& t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return bad("'tokens' must be an array of token ids");
    }
    tokens.push_back(static_cast<engine::TokenId>(t.get<int64_t>()));
  }
  auto text = worker->Detokenize(tokens, /*render_special=*/true);
  if (!text.has_value()) return SendError(out, ApiErrorOf(text.error()));
  out.Send(200, kJson, Dump({{"content", *text}}));
  return 200;
}

// /v1/responses: stateless; the whole input comes with every request.
int OpenAiRoutes::Responses(const Request& req, Responder& out) {
  auto parsed = ParseResponsesRequest(req.body);
  if (!parsed.has_value()) return SendError(out, ApiErrorOf(parsed.error()));
  ResponsesRequest& r = *parsed;
  const auto config = ctx_.config();
  sched::RunRequest run;
  run.api = "responses";
  run.model = r.model;
  run.guard = !config->guard_model.empty();
  run.guarded_prompt = GuardedPrompt(r);
  const bool stream = r.stream;
  run.job = MakeGenerationJob(r, *config);
  if (Status s = run.job.options.sampling.Validate(); !s.ok()) return SendError(out, ApiErrorOf(s));
  run.peer_fd = out.fd();
  run.half_close_is_gone = true;
  run.timeout_ms = config->request_timeout_ms;
  const ResponseContext context{NewId("resp_"), static_cast<int64_t>(std::time(nullptr)),
                                r.model.value_or(ctx_.models().front().first), r.echo_json};

  SseWriter sse(out);
  ResponsesStream events(context);
  ReplyDeltas deltas([] { return NewId("call_"); });
  bool streaming = false;
  auto send = [&](const std::vector<SseEvent>& list) {
    for (const SseEvent& e : list) {
      if (!sse.Event(e.event, e.data)) return false;
    }
    return true;
  };
  auto begin = [&] {
    if (streaming) return true;
    streaming = true;
    return sse.Begin() && send(events.Begin());
  };
  std::string text;
  run.on_text = [&](const sched::JobEvent& ev) {
    text += ev.text;
    engine::ParsedReply now = ev.parser ? ev.parser->Parse(text, /*partial=*/true) : engine::ParsedReply{text, {}, {}};
    return begin() && send(events.Next(deltas.Next(now)));
  };
  sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  if (outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  if (outcome.kind == sched::RunOutcome::Kind::kError && !outcome.refused()) {
    ApiError e = ApiErrorOf(outcome.error);
    if (!streaming) return SendError(out, e);
    send(events.Fail(e.code, e.message));
    sse.End();
    return e.status;
  }
  const engine::Completion& done = outcome.completion;
  FinalReply final_reply = ParseFinalReply(done, deltas);
  const std::string_view status = outcome.refused() ? "incomplete" : ResponseStatusFor(done.stats);
  if (!stream) {
    return out.Send(200, kJson, RenderResponse(context, final_reply.reply, done.stats, status, done.logprobs)) ? 200 : 0;
  }
  if (!begin() || !send(events.Finish(final_reply.reply, done.stats, status, done.logprobs))) return 0;
  return sse.End() ? 200 : 0;
}

int OpenAiRoutes::Embeddings(const Request& req, Responder& out) {
  auto parsed = ParseEmbeddingsRequest(req.body);
  if (!parsed.has_value()) return SendError(out, ApiErrorOf(parsed.error()));
  const auto config = ctx_.config();
  sched::RunRequest run;
  run.api = "openai";
  run.model = parsed->model;
  run.job.prompt = sched::EmbeddingInputs{std::move(parsed->inputs)};
  run.peer_fd = out.fd();
  run.half_close_is_gone = true;
  run.timeout_ms = config->request_timeout_ms;
  sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  if (outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  if (outcome.kind == sched::RunOutcome::Kind::kError) return SendError(out, ApiErrorOf(outcome.error));
  const auto& vectors = outcome.completion.embeddings;
  if (parsed->dimensions && !vectors.empty() && *parsed->dimensions != static_cast<int64_t>(vectors[0].size())) {
    return SendError(out, ApiErrorOf(InvalidArgumentError(
                              "'dimensions' must be the model's own, " + std::to_string(vectors[0].size()) +
                              " (llmd does not shorten embeddings)")));
  }
  const std::string model = parsed->model.value_or(ctx_.models().front().first);
  out.Send(200, kJson, RenderEmbeddings(vectors, parsed->base64, model, outcome.completion.stats.prompt_tokens));
  return 200;
}

// One choice of a response while it is generated: its text so far and, for a structured
// reply, the parser and the deltas already sent.
struct OpenAiRoutes::ChoiceState {
  explicit ChoiceState(uint32_t i) : index(i), deltas([] { return NewId("call_"); }) {}
  uint32_t index;
  std::string text;
  size_t text_bytes_sent = 0;  // completions: the offset of the next logprobs
  std::shared_ptr<const engine::ReplyParser> parser;
  ReplyDeltas deltas;
  sched::RunOutcome outcome;
};

int OpenAiRoutes::Generate(const Request& req, Responder& out, bool chat) {
  auto parsed = chat ? ParseChatRequest(req.body) : ParseCompletionRequest(req.body);
  if (!parsed.has_value()) return SendError(out, ApiErrorOf(parsed.error()));
  GenerationRequest& r = *parsed;
  const auto config = ctx_.config();
  const config::DaemonConfig& c = *config;
  if (c.log_text) Log(LogLevel::kDebug, "http_request", {{"body", req.body}});
  const std::string model = r.model.value_or(ctx_.models().front().first);
  sched::RunRequest base;
  base.api = "openai";
  base.model = r.model;
  // With the guard cascade on, the answer is generated whole and shown only after the guard
  // model's verdict; a refusal is an empty answer with finish_reason "content_filter".
  base.guard = !c.guard_model.empty();
  base.guarded_prompt = GuardedPrompt(r);
  const uint32_t n = r.n;
  const bool stream = r.stream;
  base.job = MakeGenerationJob(r, c);
  if (Status s = base.job.options.sampling.Validate(); !s.ok()) return SendError(out, ApiErrorOf(s));
  base.peer_fd = out.fd();
  base.half_close_is_gone = true;
  base.timeout_ms = c.request_timeout_ms;

  const std::string id = NewId(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const char* object = chat ? (stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  auto envelope = [&](json choices) {
    json j = {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", std::move(choices)}};
    if (stream && r.include_usage) j["usage"] = nullptr;
    return j;
  };
  const bool logprobs = base.job.options.sampling.top_logprobs >= 0;
  auto logprobs_json = [&](ChoiceState& choice, const std::vector<engine::TokenLogprob>& tokens) -> json {
    if (!logprobs) return nullptr;
    if (chat) return ChatLogprobs(tokens);
    json j = CompletionLogprobs(tokens, choice.text_bytes_sent);
    for (const auto& t : tokens) choice.text_bytes_sent += t.text.size();
    return j;
  };
  // A stream chunk of one choice: its delta (chat) or text (completions).
  auto chunk = [&](ChoiceState& choice, json delta_or_text, json lp, const char* finish) {
    json f = finish ? json(finish) : json(nullptr);
    json one = {{"index", choice.index}, {chat ? "delta" : "text", std::move(delta_or_text)}, {"logprobs", std::move(lp)},
                {"finish_reason", f}};
    return envelope(json::array({std::move(one)}));
  };

  std::vector<std::unique_ptr<ChoiceState>> choices;
  for (uint32_t i = 0; i < n; ++i) choices.push_back(std::make_unique<ChoiceState>(i));
  SseWriter sse(out);
  std::mutex sse_mu;      // the choices stream from their own threads
  bool streaming = false;  // guarded by sse_mu: the 200 head is out, errors now go in the stream
  bool stream_ok = true;   // guarded by sse_mu
  auto begin_stream = [&] {  // sse_mu held
    if (streaming) return stream_ok;
    streaming = true;
    stream_ok = sse.Begin();
    if (!chat) return stream_ok;
    for (auto& ch : choices) {
      if (!stream_ok) break;
      stream_ok = sse.Event(Dump(chunk(*ch, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
    }
    return stream_ok;
  };
  auto send = [&](const json& j) {  // sse_mu held
    return begin_stream() && (stream_ok = sse.Event(Dump(j)));
  };
  // The text of a structured reply goes out as the parser's deltas; plain text as it comes.
  auto stream_text = [&](ChoiceState& choice, const sched::JobEvent& ev) {
    std::lock_guard<std::mutex> lock(sse_mu);
    choice.text += ev.text;
    if (ev.parser) choice.parser = ev.parser;
    json lp = logprobs_json(choice, ev.logprobs);
    if (!chat) return send(chunk(choice, ev.text, std::move(lp), nullptr));
    ReplyDelta delta;
    if (choice.parser) delta = choice.deltas.Next(choice.parser->Parse(choice.text, /*partial=*/true));
    else delta.content = ev.text;
    if (delta.empty() && lp.is_null()) return begin_stream();  // held back for now
    return send(chunk(choice, ChatDelta(delta), std::move(lp), nullptr));
  };

  auto run_choice = [&](ChoiceState& choice) {
    sched::RunRequest run = base;  // each choice: its own job channel and seed
    run.job.channel = std::make_shared<sched::JobChannel>();
    if (choice.index > 0 && run.job.options.sampling.seed != engine::SamplingParams::kRandomSeed) {
      run.job.options.sampling.seed += choice.index;
    }
    run.on_text = [&](const sched::JobEvent& ev) { return stream_text(choice, ev); };
    choice.outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  };
  {
    std::vector<std::thread> others;
    for (uint32_t i = 1; i < n; ++i) others.emplace_back([&, i] { run_choice(*choices[i]); });
    run_choice(*choices[0]);
    for (auto& t : others) t.join();
  }

  // The first choice that failed decides an error answer.
  for (auto& ch : choices) {
    const sched::RunOutcome& o = ch->outcome;
    if (o.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
    if (o.kind == sched::RunOutcome::Kind::kError && !o.refused()) {
      ApiError e = ApiErrorOf(o.error);
      if (!streaming) return SendError(out, e);
      sse.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
      sse.Done();
      return e.status;
    }
  }
  engine::GenerationStats usage;
  for (size_t i = 0; i < choices.size(); ++i) {
    const auto& st = choices[i]->outcome.completion.stats;
    if (i == 0) {
      usage = st;  // the prompt is counted once
      continue;
    }
    usage.generated_tokens += st.generated_tokens;
    usage.draft_tokens += st.draft_tokens;
    usage.accepted_draft_tokens += st.accepted_draft_tokens;
  }
  // The final reply of a choice, parsed, and its finish reason.
  auto final_reply = [&](ChoiceState& ch, const char** finish) {
    const engine::Completion& done = ch.outcome.completion;
    FinalReply parsed = ParseFinalReply(done, ch.deltas);
    *finish = parsed.tool_calls ? "tool_calls" : FinishName(done.stats.finish_reason);
    if (ch.outcome.refused()) *finish = "content_filter";  // the refused answer's text is empty
    return std::move(parsed.reply);
  };
  if (!stream) {
    json list = json::array();
    for (auto& ch : choices) {
      const char* finish = nullptr;
      engine::ParsedReply reply = final_reply(*ch, &finish);
      json lp = logprobs_json(*ch, ch->outcome.completion.logprobs);
      if (chat) {
        list.push_back({{"index", ch->index}, {"message", AssistantMessage(reply)}, {"logprobs", lp}, {"finish_reason", finish}});
      } else {
        list.push_back({{"index", ch->index}, {"text", reply.content}, {"logprobs", lp}, {"finish_reason", finish}});
      }
    }
    json j = envelope(std::move(list));
    j["usage"] = OpenAiUsage(usage);
    return out.Send(200, kJson, Dump(j)) ? 200 : 0;
  }
  std::lock_guard<std::mutex> lock(sse_mu);
  if (!begin_stream()) return 0;
  for (auto& ch : choices) {
    const char* finish = nullptr;
    engine::ParsedReply reply = final_reply(*ch, &finish);
    if (chat && ch->outcome.completion.parser) {
      // What the last partial parse still held back (a call completed by the last token).
      ReplyDelta rest = ch->deltas.Next(reply, /*final=*/true);
      if (!rest.empty() && !send(chunk(*ch, ChatDelta(rest), nullptr, nullptr))) return 0;
    }
    if (!send(chunk(*ch, chat ? json::object() : json(""), nullptr, finish))) return 0;
  }
  if (r.include_usage) {
    json u = envelope(json::array());
    u["usage"] = OpenAiUsage(usage);
    if (!send(u)) return 0;
  }
  return sse.Done() ? 200 : 0;
}

}  // namespace llmd::http
