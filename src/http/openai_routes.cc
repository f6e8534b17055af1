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
#include "http/openai_request.h"
#include "http/sse_writer.h"
#include "sched/guard.h"

namespace llmd::http {
namespace {

using nlohmann::json;
constexpr const char* kJson = "application/json";
// TCP peers have no uid: they share one rate-limit bucket of their own.
constexpr uint32_t kTcpRateBucket = 0xFFFFFFFEu;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

struct ApiError {
  int status;
  const char* type;
  const char* code;
  std::string message;
  Headers headers;
};

int SendError(Responder& out, const ApiError& e) {
  json body = {{"error", {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", e.code}}}};
  out.Send(e.status, kJson, Dump(body), e.headers);
  return e.status;
}

std::string RetryAfterSeconds(int64_t wait_ms) { return std::to_string(std::max<int64_t>(1, (wait_ms + 999) / 1000)); }

ApiError FromStatus(const Status& s) {
  const std::string& m = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      if (m.starts_with("prompt too long")) return {400, "invalid_request_error", "context_length_exceeded", m, {}};
      return {400, "invalid_request_error", "invalid_request", m, {}};
    case StatusCode::kNotFound: return {404, "invalid_request_error", "not_found", m, {}};
    case StatusCode::kResourceExhausted:
      return {503, "server_error", "server_busy", m, {{"Retry-After", "1"}}};
    case StatusCode::kUnavailable: return {503, "server_error", "unavailable", m, {{"Retry-After", "1"}}};
    case StatusCode::kDeadlineExceeded: return {504, "server_error", "timeout", m, {}};
    case StatusCode::kUnimplemented: return {501, "server_error", "unsupported", m, {}};
    default: return {500, "server_error", "internal_error", m, {}};
  }
}

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

// Stops a job and waits for its final event, after which the engine is done with it.
void CancelAndDrain(sched::JobChannel& ch) {
  ch.Cancel();
  while (true) {
    auto ev = ch.TryPop();
    if (ev && ev->type != sched::JobEvent::Type::kText) return;
    if (!ev) {
      pollfd p{ch.event_fd(), POLLIN, 0};
      ::poll(&p, 1, 100);
    }
  }
}

// Waits for a job's next event. nullopt when the peer hung up or the deadline passed
// (`*timed_out` says which); the job is then cancelled and drained.
std::optional<sched::JobEvent> NextEvent(sched::JobChannel& ch, int fd, int64_t deadline, bool* timed_out) {
  while (true) {
    if (auto ev = ch.TryPop()) return ev;
    *timed_out = RealClock::Get().NowMs() > deadline;
    pollfd fds[2] = {{ch.event_fd(), POLLIN, 0}, {fd, POLLRDHUP, 0}};
    if (!*timed_out) ::poll(fds, 2, 100);
    if (*timed_out || (fds[1].revents & (POLLHUP | POLLERR | POLLRDHUP))) {
      CancelAndDrain(ch);
      return std::nullopt;
    }
  }
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

OpenAiRoutes::OpenAiRoutes(sched::ServerContext& ctx, ApiOptions options) : ctx_(ctx), options_(std::move(options)) {}

void OpenAiRoutes::Handle(const Request& request, Responder& out) {
  const int status = Route(request, out);
  if (request.path.starts_with("/v1/")) ctx_.requests.Count("http", OutcomeName(status));
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
    const bool ready = ctx_.ready.load() && !ctx_.stopping.load();
    const char* state = ctx_.stopping.load() ? "stopping" : (ready ? "ok" : "loading");
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
  if (!ctx_.ready.load()) {
    return SendError(out, {503, "server_error", "loading", "the model is still loading; retry shortly", {{"Retry-After", "1"}}});
  }
  if (ctx_.stopping.load()) return SendError(out, FromStatus(UnavailableError("the daemon is shutting down")));
  const uint32_t bucket = req.peer.tcp ? kTcpRateBucket : req.peer.uid;
  if (int64_t wait_ms = ctx_.rate_limiter->Acquire(bucket); wait_ms > 0) {
    return SendError(out, {429, "rate_limit_error", "rate_limit_exceeded",
                           "rate limited, retry after " + std::to_string(wait_ms) + " ms",
                           {{"Retry-After", RetryAfterSeconds(wait_ms)}}});
  }
  if (models) {
    json data = json::array();
    for (const auto& [name, w] : ctx_.workers) {
      data.push_back({{"id", name}, {"object", "model"}, {"created", options_.started_unix}, {"owned_by", "llmd"}});
    }
    out.Send(200, kJson, Dump({{"object", "list"}, {"data", data}}));
    return 200;
  }
  return Generate(req, out, chat);
}

int OpenAiRoutes::Generate(const Request& req, Responder& out, bool chat) {
  auto parsed = chat ? ParseChatRequest(req.body) : ParseCompletionRequest(req.body);
  if (!parsed.has_value()) return SendError(out, FromStatus(parsed.error()));
  GenerationRequest& r = *parsed;
  const auto config = ctx_.config();
  const config::DaemonConfig& c = *config;
  // With the guard cascade on, the answer is generated whole and shown only after the guard
  // model's verdict; a refusal is an empty answer with finish_reason "content_filter".
  const bool guard = !c.guard_model.empty();
  sched::EngineWorker* worker = ctx_.WorkerFor(r.model);
  if (worker == nullptr) {
    return SendError(out, {404, "invalid_request_error", "model_not_found",
                           "model '" + *r.model + "' is not loaded; loaded: " + ctx_.ModelNames(), {}});
  }
  const std::string model = r.model.value_or(ctx_.workers.front().first);

  sched::Job job;
  job.sanitize = c.content_safety_check;
  std::string guarded_prompt;  // what the guard sees as the user's side of the exchange
  if (chat) {
    for (const auto& m : r.messages) {
      if (m.role == "user") guarded_prompt = m.content;
    }
    job.messages = std::move(r.messages);
    const bool has_system = std::any_of(job.messages.begin(), job.messages.end(),
                                        [](const chat::Message& m) { return m.role == "system"; });
    if (!has_system && !c.system_prompt.empty()) job.messages.insert(job.messages.begin(), {"system", c.system_prompt});
    job.enable_thinking = r.enable_thinking;
    job.options.strip_think = !r.enable_thinking;
  } else {
    job.raw = true;
    guarded_prompt = r.prompt;
    job.user = std::move(r.prompt);
  }
  job.options.max_tokens = static_cast<int32_t>(std::min(r.max_tokens.value_or(c.max_new_tokens), c.max_new_tokens));
  job.options.sampling = c.sampling;
  if (r.temperature) job.options.sampling.temperature = *r.temperature;
  if (r.top_p) job.options.sampling.top_p = *r.top_p;
  if (r.top_k) job.options.sampling.top_k = *r.top_k;
  if (r.repeat_penalty) job.options.sampling.repeat_penalty = *r.repeat_penalty;
  if (r.seed) job.options.sampling.seed = *r.seed;
  if (Status s = job.options.sampling.Validate(); !s.ok()) return SendError(out, FromStatus(s));
  job.stop = r.stop;
  job.stream = r.stream && !guard;
  job.channel = std::make_shared<sched::JobChannel>();
  auto channel = job.channel;
  if (c.log_text) Log(LogLevel::kDebug, "http_request", {{"body", req.body}});
  if (Status s = worker->Submit(std::move(job)); !s.ok()) return SendError(out, FromStatus(s));

  const int64_t deadline = RealClock::Get().NowMs() + c.request_timeout_ms;
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
  const char* finish_override = nullptr;  // "content_filter" when the guard refused
  auto finish_name = [&](engine::FinishReason f) { return finish_override ? finish_override : FinishName(f); };
  std::deque<sched::JobEvent> replay;  // a guarded answer, replayed as a stream once allowed
  while (true) {
    bool timed_out = false;
    std::optional<sched::JobEvent> ev;
    if (!replay.empty()) {
      ev = std::move(replay.front());
      replay.pop_front();
    } else {
      ev = NextEvent(*channel, out.fd(), deadline, &timed_out);
    }
    if (!ev) {
      if (!timed_out) return 0;
      ApiError e = FromStatus(DeadlineExceededError("generation exceeded request_timeout_ms"));
      if (!streaming) return SendError(out, e);
      sse.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
      sse.Done();
      return 504;
    }
    if (ev->type == sched::JobEvent::Type::kError) {
      Status error = ctx_.stopping.load() ? UnavailableError("the daemon is shutting down") : ev->error;
      ApiError e = FromStatus(error);
      if (!streaming) return SendError(out, e);
      sse.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
      sse.Done();
      return e.status;
    }
    if (ev->type == sched::JobEvent::Type::kDone &&
        ev->completion.stats.finish_reason == engine::FinishReason::kCancelled) {
      ApiError e = FromStatus(UnavailableError("the daemon is shutting down"));
      if (!streaming) return SendError(out, e);
      sse.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
      sse.Done();
      return e.status;
    }
    if (guard && ev->type == sched::JobEvent::Type::kDone && finish_override == nullptr && replay.empty()) {
      sched::Job check = sched::GuardJob(c, guarded_prompt, ev->completion.text);
      auto verdict_channel = check.channel;
      if (Status st = ctx_.WorkerFor(c.guard_model)->Submit(std::move(check)); !st.ok()) {
        return SendError(out, FromStatus(st.WithContext("guard")));
      }
      std::optional<sched::JobEvent> verdict;
      while (!verdict || verdict->type == sched::JobEvent::Type::kText) {
        verdict = NextEvent(*verdict_channel, out.fd(), deadline, &timed_out);
        if (!verdict) {
          return timed_out ? SendError(out, FromStatus(DeadlineExceededError("the guard exceeded request_timeout_ms"))) : 0;
        }
      }
      if (verdict->type == sched::JobEvent::Type::kError) {
        return SendError(out, FromStatus(verdict->error.WithContext("guard")));
      }
      const std::string refusal = sched::GuardRefusal(verdict->completion.text);
      Log(LogLevel::kInfo, "guard_verdict", {{"api", "http"}, {"verdict", verdict->completion.text}});
      if (!refusal.empty()) {
        finish_override = "content_filter";
        ev->completion.text.clear();
      } else {
        finish_override = FinishName(ev->completion.stats.finish_reason);
      }
      if (r.stream) {  // replay the whole answer as one chunk, then the end
        if (!ev->completion.text.empty()) replay.push_back({sched::JobEvent::Type::kText, ev->completion.text, {}, {}});
        replay.push_back(std::move(*ev));
        continue;
      }
    }
    if (!r.stream) {  // only kDone reaches here: no text events without streaming
      const auto& st = ev->completion.stats;
      json j = envelope(json::array({choice(ev->completion.text, finish_name(st.finish_reason))}));
      j["usage"] = Usage(st);
      return out.Send(200, kJson, Dump(j)) ? 200 : 0;
    }
    if (!streaming) {
      streaming = true;
      if (!sse.Begin()) {
        CancelAndDrain(*channel);
        return 0;
      }
      if (chat) {
        json first = envelope(json::array({{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                             {"logprobs", nullptr}, {"finish_reason", nullptr}}}));
        sse.Event(Dump(first));
      }
    }
    if (ev->type == sched::JobEvent::Type::kText) {
      if (!sse.Event(Dump(envelope(json::array({choice(ev->text, nullptr)}))))) {
        CancelAndDrain(*channel);  // the peer stopped reading or left: free the slot
        return 0;
      }
      continue;
    }
    const auto& st = ev->completion.stats;  // kDone
    sse.Event(Dump(envelope(json::array({choice("", finish_name(st.finish_reason))}))));
    if (r.include_usage) {
      json u = envelope(json::array());
      u["usage"] = Usage(st);
      sse.Event(Dump(u));
    }
    return sse.Done() ? 200 : 0;
  }
}

}  // namespace llmd::http
