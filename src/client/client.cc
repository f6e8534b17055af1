#include "llmd/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/request_class.h"
#include "proto/frame_codec.h"
#include "proto/messages.h"

namespace llmd {
namespace {

using Kind = ClientError::Kind;

ClientError Err(Kind kind, std::string message, uint32_t code = 0) {
  return ClientError{kind, code, std::move(message)};
}

// One connection for one request.
class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  std::optional<ClientError> Open(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof addr.sun_path) {
      return Err(Kind::kConnectionFailed, "socket path too long: " + path);
    }
    std::memcpy(addr.sun_path, path.data(), path.size());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Err(Kind::kConnectionFailed, std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return Err(Kind::kConnectionFailed, "cannot connect to " + path + ": " + std::strerror(errno));
    }
    return std::nullopt;
  }

  std::optional<ClientError> Send(const proto::Request& req, std::chrono::milliseconds timeout) {
    std::string frame = proto::EncodeFrame(proto::EncodeRequest(req));
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    size_t sent = 0;
    while (sent < frame.size()) {
      ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Err(Kind::kTimeout, "sending the request timed out");
      if (n <= 0) return Err(Kind::kIoError, std::string("send failed: ") + std::strerror(errno));
      sent += static_cast<size_t>(n);
    }
    return std::nullopt;
  }

  // The next response within `timeout`; a close before it is an IoError (see eof()).
  ClientResult<proto::Response> Receive(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (!pending_.empty()) {
        auto used = decoder_.Feed(pending_);
        if (!used.has_value()) return Err(Kind::kIoError, used.error().message());
        pending_.erase(0, *used);
      }
      if (auto frame = decoder_.TakeFrame()) {
        auto resp = proto::DecodeResponse(*frame);
        if (!resp.has_value()) return Err(Kind::kIoError, "unreadable response: " + resp.error().message());
        return *resp;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Err(Kind::kTimeout, "no response within " + std::to_string(timeout.count()) + " ms");
      pollfd p{fd_, POLLIN, 0};
      int rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) continue;
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Err(Kind::kIoError, std::string("receive failed: ") + std::strerror(errno));
      if (n == 0) {
        eof_ = true;
        return Err(Kind::kIoError, "the daemon closed the connection without answering");
      }
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  bool eof() const { return eof_; }

 private:
  int fd_ = -1;
  proto::FrameDecoder decoder_;
  std::string pending_;
  bool eof_ = false;
};

ClientError ServerError(const proto::Response& r) {
  return Err(Kind::kServerError, r.text, static_cast<uint32_t>(r.code));
}

ClientError Unexpected(const proto::Response& r) {
  return Err(Kind::kIoError, "unexpected response variant " + std::to_string(static_cast<uint32_t>(r.type)));
}

// Connects, sends `req` and waits for the first response frame.
ClientResult<proto::Response> RoundTrip(Connection& c, const std::string& path, const proto::Request& req,
                                        std::chrono::milliseconds timeout) {
  if (auto e = c.Open(path)) return *e;
  if (auto e = c.Send(req, timeout)) return *e;
  return c.Receive(timeout);
}

proto::Request Simple(proto::Request::Type type) {
  proto::Request r;
  r.type = type;
  return r;
}

const char* FinishName(proto::FinishReason f) {
  switch (f) {
    case proto::FinishReason::kStop: return "stop";
    case proto::FinishReason::kLength: return "length";
    case proto::FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

// A streamed generation (GenerateStream or Chat): Token frames until Done or Error.
ClientResult<Generation> Stream(const std::string& path, std::chrono::milliseconds timeout,
                                proto::Request::Type type, std::string_view session, std::string_view prompt,
                                const GenerateOptions& o, const std::function<bool(std::string_view)>& on_text) {
  Connection c;
  if (auto e = c.Open(path)) return *e;
  proto::Request req;
  req.type = type;
  req.session = std::string(session);
  req.prompt = std::string(prompt);
  req.max_tokens = o.max_tokens;
  req.params = {o.system, o.temperature, o.top_p, o.top_k, o.repeat_penalty, o.seed, o.model, o.guard};
  req.params.draft_max = o.draft_max;
  if (o.overflow) {
    req.params.overflow = *o.overflow == Overflow::kDropOldest ? proto::kOverflowDropOldest : proto::kOverflowError;
  }
  if (auto e = c.Send(req, timeout)) return *e;
  Generation g;
  while (true) {
    auto resp = c.Receive(timeout);
    if (!resp.has_value()) return resp.error();
    switch (resp->type) {
      case proto::Response::Type::kToken:
        g.text += resp->text;
        if (on_text && !on_text(resp->text)) {
          g.finish_reason = "cancelled";
          return g;  // closing the connection cancels the generation
        }
        break;
      case proto::Response::Type::kDone:
        g.tokens_generated = resp->tokens_generated;
        g.prompt_tokens = resp->stats.prompt_tokens;
        g.cached_tokens = resp->stats.cached_tokens;
        g.prefill_ms = resp->stats.prefill_ms;
        g.ttft_ms = resp->stats.ttft_ms;
        g.decode_ms = resp->stats.decode_ms;
        g.guard_ms = resp->stats.guard_ms;
        g.draft_tokens = resp->stats.draft_tokens;
        g.accepted_draft_tokens = resp->stats.accepted_draft_tokens;
        g.dropped_tokens = resp->stats.dropped_tokens;
        g.dropped_turns = resp->stats.dropped_turns;
        g.finish_reason = FinishName(resp->stats.finish_reason);
        return g;
      case proto::Response::Type::kError:
        return ServerError(*resp);
      default:
        return Unexpected(*resp);
    }
  }
}

std::optional<ClientError> SessionRequest(const std::string& path, std::chrono::milliseconds timeout,
                                          proto::Request::Type type, std::string_view session) {
  proto::Request req = Simple(type);
  req.session = std::string(session);
  Connection c;
  auto resp = RoundTrip(c, path, req, timeout);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kAck) return Unexpected(*resp);
  return std::nullopt;
}

}  // namespace

std::string ClientError::ToString() const {
  switch (kind) {
    case Kind::kConnectionFailed: return "ConnectionFailed: " + message;
    case Kind::kTimeout: return "Timeout: " + message;
    case Kind::kIoError: return "IoError: " + message;
    case Kind::kServerError:
      return "ServerError(" + std::string(proto::ErrorCodeName(static_cast<proto::ErrorCode>(server_code))) +
             "): " + message;
  }
  return message;
}

LlmClient::LlmClient(std::string socket_path, std::chrono::milliseconds timeout)
    : socket_path_(std::move(socket_path)), timeout_(timeout) {}

ClientResult<Generation> LlmClient::Generate(std::string_view prompt, std::optional<uint32_t> max_tokens) const {
  proto::Request req = Simple(proto::Request::Type::kGenerate);
  req.prompt = std::string(prompt);
  req.max_tokens = max_tokens;
  Connection c;
  auto resp = RoundTrip(c, socket_path_, req, timeout_);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kGenerated) return Unexpected(*resp);
  Generation g;
  g.text = std::move(resp->text);
  g.tokens_generated = resp->tokens_generated;
  return g;
}

ClientResult<Generation> LlmClient::GenerateStream(std::string_view prompt, const GenerateOptions& o,
                                                   const std::function<bool(std::string_view)>& on_text) const {
  return Stream(socket_path_, timeout_, proto::Request::Type::kGenerateStream, "", prompt, o, on_text);
}

ClientResult<Generation> LlmClient::Chat(std::string_view session, std::string_view message,
                                         const GenerateOptions& o,
                                         const std::function<bool(std::string_view)>& on_text) const {
  return Stream(socket_path_, timeout_, proto::Request::Type::kChat, session, message, o, on_text);
}

std::optional<ClientError> LlmClient::EndSession(std::string_view session) const {
  return SessionRequest(socket_path_, timeout_, proto::Request::Type::kEndSession, session);
}
std::optional<ClientError> LlmClient::SaveSession(std::string_view session) const {
  return SessionRequest(socket_path_, timeout_, proto::Request::Type::kSaveSession, session);
}
std::optional<ClientError> LlmClient::RestoreSession(std::string_view session) const {
  return SessionRequest(socket_path_, timeout_, proto::Request::Type::kRestoreSession, session);
}
std::optional<ClientError> LlmClient::DeleteSession(std::string_view session) const {
  return SessionRequest(socket_path_, timeout_, proto::Request::Type::kDeleteSession, session);
}



ClientResult<ServerStats> LlmClient::Stats() const {
  Connection c;
  auto resp = RoundTrip(c, socket_path_, Simple(proto::Request::Type::kStats), timeout_);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kServerStats) return Unexpected(*resp);
  const auto& s = resp->server_stats;
  ServerStats out{s.requests, s.generated_tokens, s.ttft_p50_ms, s.ttft_p95_ms, s.prefill_tokens_per_second,
                  s.decode_tokens_per_second, s.cached_token_ratio, s.active, s.queued, s.sessions, std::nullopt};
  if (s.memory) {
    const proto::MemoryStats& m = *s.memory;
    out.memory = ServerStats::Memory{m.weights_resident_mib, m.kv_reserved_mib, m.kv_resident_mib, m.compute_mib,
                                     m.checkpoints_mib, m.process_resident_mib, m.working_memory_releases};
  }
  out.draft_tokens = s.draft_tokens;
  out.accepted_draft_tokens = s.accepted_draft_tokens;
  for (const proto::ClientStats& c : s.clients) {
    out.clients.push_back({c.uid, RequestClassName(static_cast<RequestClass>(c.request_class)), c.requests,
                           c.refused_budget, c.refused_queue_full, c.refused_busy, c.refused_deadline, c.queue_wait_ms,
                           c.ttft_ms, c.prompt_tokens, c.cached_tokens, c.generated_tokens, c.preemptions});
  }
  return out;
}

ClientResult<std::vector<std::string>> LlmClient::Models() const {
  Connection c;
  auto resp = RoundTrip(c, socket_path_, Simple(proto::Request::Type::kModels), timeout_);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kModels) return Unexpected(*resp);
  return std::move(resp->models);
}

ClientResult<std::vector<std::string>> LlmClient::RunningModels() const {
  Connection c;
  auto resp = RoundTrip(c, socket_path_, Simple(proto::Request::Type::kRunningModels), timeout_);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kModels) return Unexpected(*resp);
  return std::move(resp->models);
}

namespace {

// One management request answered by Ack (after PullProgress frames, for a pull).
std::optional<ClientError> Manage(const std::string& path, std::chrono::milliseconds timeout, const proto::Request& req,
                                  const std::function<bool(const LlmClient::PullProgress&)>& on_progress) {
  Connection c;
  if (auto e = c.Open(path)) return *e;
  if (auto e = c.Send(req, timeout)) return *e;
  while (true) {
    auto resp = c.Receive(timeout);
    if (!resp.has_value()) return resp.error();
    if (resp->type == proto::Response::Type::kAck) return std::nullopt;
    if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
    if (resp->type != proto::Response::Type::kPullProgress) return Unexpected(*resp);
    if (on_progress && !on_progress({resp->pull_status, resp->pull_completed, resp->pull_total})) {
      return Err(Kind::kIoError, "stopped by the caller");
    }
  }
}

}  // namespace

std::optional<ClientError> LlmClient::PullModel(std::string_view source,
                                                const std::function<bool(const PullProgress&)>& on_progress) const {
  proto::Request r = Simple(proto::Request::Type::kPullModel);
  r.model = std::string(source);
  return Manage(socket_path_, timeout_, r, on_progress);
}

std::optional<ClientError> LlmClient::CopyModel(std::string_view source, std::string_view destination) const {
  proto::Request r = Simple(proto::Request::Type::kCopyModel);
  r.model = std::string(source);
  r.destination = std::string(destination);
  return Manage(socket_path_, timeout_, r, nullptr);
}

std::optional<ClientError> LlmClient::DeleteModel(std::string_view model) const {
  proto::Request r = Simple(proto::Request::Type::kDeleteModel);
  r.model = std::string(model);
  return Manage(socket_path_, timeout_, r, nullptr);
}

ClientResult<Health> LlmClient::HealthCheck() const {
  Connection c;
  auto resp = RoundTrip(c, socket_path_, Simple(proto::Request::Type::kHealthCheck), timeout_);
  if (!resp.has_value()) return resp.error();
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  if (resp->type != proto::Response::Type::kHealth) return Unexpected(*resp);
  return Health{resp->model_loaded, resp->npu_core, resp->kv_cache_usage};
}

std::optional<ClientError> LlmClient::Shutdown() const {
  Connection c;
  auto resp = RoundTrip(c, socket_path_, Simple(proto::Request::Type::kShutdown), timeout_);
  if (!resp.has_value()) {
    // Accepted: the daemon closes the connection without a reply and stops.
    if (c.eof()) return std::nullopt;
    return resp.error();
  }
  if (resp->type == proto::Response::Type::kError) return ServerError(*resp);
  return Unexpected(*resp);
}

}  // namespace llmd
