#include "http/openai_routes.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "common/clock.h"
#include "common/log.h"
#include "http/metrics_page.h"
#include "http/openai_errors.h"
#include "http/openai_request.h"
#include "http/sse_writer.h"
#include "sched/request_runner.h"

namespace llmd::http {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";
// TCP peers have no uid: they share one rate-limit bucket of their own.
constexpr uint32_t kTcpRateBucket = 0xFFFFFFFEu;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int SendError(Responder& out, const ApiError& e) {
  json body = {{"error", {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", e.code}}}};
  out.Send(e.status, kJson, Dump(body), e.headers);
  return e.status;
}

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

std::string NewId(const char* prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return prefix + std::string(buf);
}

const char* FinishName(engine::FinishReason r) { return r == engine::FinishReason::kLength ? "length" : "stop"; }

json Usage(const engine::GenerationStats& st) {
  return {{"prompt_tokens", st.prompt_tokens},
          {"completion_tokens", st.generated_tokens},
          {"total_tokens", st.prompt_tokens + st.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", st.cached_tokens}}}};
}

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

OpenAiRoutes::OpenAiRoutes(sched::ServerState& ctx, ApiOptions options) : ctx_(ctx), options_(std::move(options)) {}

void OpenAiRoutes::Handle(const Request& request, Responder& out) {
  const int status = Route(request, out);
  if (request.path.starts_with("/v1/")) ctx_.requests().Count("http", OutcomeName(status));
}

int OpenAiRoutes::Route(const Request& req, Responder& out) {
  if (req.peer.tcp) {
    if (!HostAllowed(req.header("host"), options_.allowed_hosts)) {
      return SendError(out, {403, "permission_error", "host_not_allowed",
                             "the Host header is not an allowed name for this server (http_allowed_hosts)", {}});
    }
    // A browser page on another site sends its own Origin: refuse it (no CORS, ever).
    if (std::string origin = req.header("origin"); !origin.empty()) {
      const size_t scheme = origin.find("://");
      if (scheme == std::string::npos || !HostAllowed(origin.substr(scheme + 3), options_.allowed_hosts)) {
        return SendError(out, {403, "permission_error", "origin_not_allowed",
                               "cross-origin requests are not allowed", {}});
      }
    }
    if (req.path != "/health" && !ConstantTimeEquals(req.header("authorization"), "Bearer " + options_.api_key)) {
      return SendError(out, {401, "authentication_error", "invalid_api_key",
                             "a valid API key is required: Authorization: Bearer <key from api_key_file>",
                             {{"WWW-Authenticate", "Bearer"}}});
    }
  }
  auto method_is = [&](const char* m) { return req.method == m; };
  auto wrong_method = [&](const char* allow) {
    return SendError(out, {405, "invalid_request_error", "method_not_allowed",
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
             completions = req.path == "/v1/completions";
  if (!models && !chat && !completions) {
    return SendError(out, {404, "invalid_request_error", "not_found", "no such endpoint: " + req.path, {}});
  }
  if (models && !method_is("GET")) return wrong_method("GET");
  if (!models && !method_is("POST")) return wrong_method("POST");
  if (!ctx_.ready()) {
    return SendError(out, OpenAiError(UnavailableError("the model is still loading; retry shortly")
                                          .WithReason(ErrorReason::kModelLoading)));
  }
  if (ctx_.stopping()) {
    return SendError(out, OpenAiError(sched::ShuttingDownError()));
  }
  const uint32_t bucket = req.peer.tcp ? kTcpRateBucket : req.peer.uid;
  if (int64_t wait_ms = ctx_.rate_limiter().Acquire(bucket); wait_ms > 0) {
    return SendError(out, {429, "rate_limit_error", "rate_limit_exceeded",
                           "rate limited, retry after " + std::to_string(wait_ms) + " ms",
                           {{"Retry-After", RetryAfterSeconds(wait_ms)}}});
  }
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

// The job of an OpenAI request: the conversation or raw prompt, the limits and sampling.
sched::Job OpenAiRoutes::MakeJob(GenerationRequest& r, const config::DaemonConfig& c) const {
  sched::Job job;
  job.sanitize = c.content_safety_check;
  if (r.chat) {
    sched::Conversation conversation{std::move(r.messages), r.enable_thinking};
    auto& messages = conversation.messages;
    const bool has_system =
        std::any_of(messages.begin(), messages.end(), [](const chat::Message& m) { return m.role == "system"; });
    if (!has_system && !c.system_prompt.empty()) messages.insert(messages.begin(), {"system", c.system_prompt});
    job.prompt = std::move(conversation);
    job.options.strip_think = !r.enable_thinking;
  } else {
    job.prompt = sched::RawCompletion{std::move(r.prompt)};
  }
  job.options.max_tokens = static_cast<int32_t>(std::min(r.max_tokens.value_or(c.max_new_tokens), c.max_new_tokens));
  engine::SamplingParams& p = job.options.sampling;
  p = c.sampling;
  if (r.temperature) p.temperature = *r.temperature;
  if (r.top_p) p.top_p = *r.top_p;
  if (r.top_k) p.top_k = *r.top_k;
  if (r.repeat_penalty) p.repeat_penalty = *r.repeat_penalty;
  if (r.presence_penalty) p.presence_penalty = *r.presence_penalty;
  if (r.frequency_penalty) p.frequency_penalty = *r.frequency_penalty;
  if (r.seed) p.seed = *r.seed;
  job.stop = r.stop;
  job.stream = r.stream;
  return job;
}

int OpenAiRoutes::Generate(const Request& req, Responder& out, bool chat) {
  auto parsed = chat ? ParseChatRequest(req.body) : ParseCompletionRequest(req.body);
  if (!parsed.has_value()) return SendError(out, OpenAiError(parsed.error()));
  GenerationRequest& r = *parsed;
  const auto config = ctx_.config();
  const config::DaemonConfig& c = *config;
  if (c.log_text) Log(LogLevel::kDebug, "http_request", {{"body", req.body}});
  const std::string model = r.model.value_or(ctx_.models().front().first);
  sched::RunRequest run;
  run.api = "http";
  run.model = r.model;
  // With the guard cascade on, the answer is generated whole and shown only after the guard
  // model's verdict; a refusal is an empty answer with finish_reason "content_filter".
  run.guard = !c.guard_model.empty();
  if (chat) {
    for (const auto& m : r.messages) {
      if (m.role == "user") run.guarded_prompt = m.content;
    }
  } else {
    run.guarded_prompt = r.prompt;
  }
  run.job = MakeJob(r, c);
  if (Status s = run.job.options.sampling.Validate(); !s.ok()) return SendError(out, OpenAiError(s));
  run.peer_fd = out.fd();
  run.half_close_is_gone = true;
  run.timeout_ms = c.request_timeout_ms;

  const std::string id = NewId(chat ? "chatcmpl-" : "cmpl-");
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  const char* object = chat ? (r.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  auto envelope = [&](json choices) {
    json j = {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", std::move(choices)}};
    if (r.stream && r.include_usage) j["usage"] = nullptr;
    return j;
  };
  auto choice = [&](const std::string& text, const char* finish) {
    json f = finish ? json(finish) : json(nullptr);
    if (!chat) return json{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", f}};
    if (!r.stream) {
      return json{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"logprobs", nullptr},
                  {"finish_reason", f}};
    }
    json delta = finish ? json::object() : json{{"content", text}};
    return json{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", f}};
  };

  SseWriter sse(out);
  bool streaming = false;  // the 200 head is out: errors now go in the stream
  auto begin_stream = [&] {
    if (streaming) return true;
    streaming = true;
    if (!sse.Begin()) return false;
    if (!chat) return true;
    return sse.Event(Dump(envelope(json::array({{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                                  {"logprobs", nullptr}, {"finish_reason", nullptr}}}))));
  };
  run.on_text = [&](std::string_view text) {
    return begin_stream() && sse.Event(Dump(envelope(json::array({choice(std::string(text), nullptr)}))));
  };
  const bool stream = r.stream;
  sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
  if (outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  const char* finish = FinishName(outcome.completion.stats.finish_reason);
  if (outcome.kind == sched::RunOutcome::Kind::kError) {
    if (!outcome.refused()) {
      ApiError e = OpenAiError(outcome.error);
      if (!streaming) return SendError(out, e);
      sse.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
      sse.Done();
      return e.status;
    }
    finish = "content_filter";  // the refused answer's text is already empty
  }
  const auto& st = outcome.completion.stats;
  if (!stream) {
    json j = envelope(json::array({choice(outcome.completion.text, finish)}));
    j["usage"] = Usage(st);
    return out.Send(200, kJson, Dump(j)) ? 200 : 0;
  }
  if (!begin_stream()) return 0;
  sse.Event(Dump(envelope(json::array({choice("", finish)}))));
  if (r.include_usage) {
    json u = envelope(json::array());
    u["usage"] = Usage(st);
    sse.Event(Dump(u));
  }
  return sse.Done() ? 200 : 0;
}

}  // namespace llmd::http
