#include "daemon/http_frontend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <memory>
#include <optional>
#include <utility>

#include "format/session_file.h"
#include "http/anthropic/anthropic_routes.h"
#include "http/ollama/ollama_routes.h"
#include "http/openai/openai_routes.h"
#include "http/responses/responses_routes.h"
#include "transport/loopback_peer.h"

namespace llmd::daemon {
namespace {

// The API key: the file's first line, without surrounding whitespace.
Result<std::string> ReadApiKey(const std::string& path) {
  LLMD_ASSIGN_OR_RETURN(std::string text, format::ReadSmallFile(path, 4096));
  text = text.substr(0, text.find('\n'));
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && space(text.back())) text.pop_back();
  while (!text.empty() && space(text.front())) text.erase(0, 1);
  if (text.size() < 16) return InvalidArgumentError("api_key_file " + path + ": the key must be at least 16 characters");
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH)) {
    Log(LogLevel::kWarn, "api_key_file_readable", {{"path", path}, {"hint", "chmod o-r: every local user can read the key"}});
  }
  return text;
}

// The HTTP API's Unix socket: the native socket's mode and group rules.
Result<std::unique_ptr<transport::UnixListener>> OpenHttpSocket(const config::DaemonConfig& c,
                                                               const std::string& socket_path) {
  transport::ListenOptions lo;
  lo.path = socket_path;
  lo.mode = c.socket_mode;
  lo.group = c.socket_group;
  lo.allow_systemd = false;  // socket activation hands over the native socket only
  return transport::UnixListener::Open(lo);
}

// A loopback TCP listener on `address`; with api_key_file, TCP peers need its key (read on
// first use), else an allowed UID. Adds the Host headers a loopback client sends to it to
// api->allowed_hosts: anything else may be DNS rebinding. `bound` gets the address with the
// port resolved.
Status ListenLoopback(const config::DaemonConfig& c, const std::string& address, http::ApiOptions* api, int* fd,
                      std::string* bound) {
  if (api->api_key.empty() && !c.api_key_file.empty()) {
    LLMD_ASSIGN_OR_RETURN(api->api_key, ReadApiKey(c.api_key_file));
  }
  int port = 0;
  LLMD_ASSIGN_OR_RETURN(*fd, http::ListenLoopbackTcp(address, &port));
  const std::string host = address.substr(0, address.rfind(':'));
  *bound = host + ":" + std::to_string(port);
  for (const std::string& name : {host, std::string("localhost"), std::string("127.0.0.1"), std::string("[::1]")}) {
    api->allowed_hosts.push_back(name + ":" + std::to_string(port));
  }
  for (const auto& extra : c.http_allowed_hosts) {
    api->allowed_hosts.push_back(extra);
    api->allowed_hosts.push_back(extra + ":" + std::to_string(port));
  }
  return Status::Ok();
}

void ApplyConnectionLimits(const config::DaemonConfig& c, http::ServerOptions* so) {
  so->max_body_bytes = c.http_max_body_bytes;
  so->max_connections = c.http_max_connections;
  so->max_unidentified_connections = c.http_unidentified_connections;
  so->header_timeout_ms = static_cast<int>(c.http_header_timeout_ms);
  so->idle_timeout_ms = static_cast<int>(c.idle_timeout_ms);
  so->request_timeout_ms = static_cast<int>(c.frame_timeout_ms);
  so->write_timeout_ms = static_cast<int>(c.write_timeout_ms);
}

// Unix-socket peers whose credentials the policy allows; a rejection is logged, rate-limited
// by `reject_log` (a local client retrying in a loop must not flood the log).
std::optional<http::Peer> AdmitPeer(int fd, const transport::AccessPolicy& policy, LogRateLimiter* reject_log) {
  auto peer = transport::GetPeerCred(fd);
  if (peer.has_value() && policy.Allows(*peer)) {
    return http::Peer{false, peer->uid, peer->gid, peer->pid, true, true};
  }
  long suppressed = 0;
  if (reject_log->Allow(&suppressed)) {
    Log(LogLevel::kWarn, "peer_rejected",
        {{"api", "http"}, {"uid", peer.has_value() ? std::to_string(peer->uid) : "?"},
         {"pid", peer.has_value() ? std::to_string(peer->pid) : "?"}, {"suppressed", std::to_string(suppressed)}});
  }
  return std::nullopt;
}

// A loopback TCP peer, by the kernel's socket table: its UID (and that UID's primary group),
// and whether the allowlist allows it. One the table does not name is unidentified; the router
// refuses it unless it sends the API key.
http::Peer IdentifyTcpPeer(int fd, const transport::AccessPolicy& policy) {
  http::Peer peer;
  peer.tcp = true;
  auto cred = transport::LoopbackPeerCred(fd);
  if (!cred.has_value()) return peer;
  peer.identified = true;
  peer.uid = cred->uid;
  peer.gid = cred->gid;
  peer.allowed = policy.Allows(*cred);
  return peer;
}

// The Responses API's stored responses: limits from the config (read at start), files under
// session_dir/responses when session_dir is set.
std::shared_ptr<http::ResponseStore> MakeResponseStore(const config::DaemonConfig& c) {
  http::ResponseStoreOptions o;
  o.max_responses = c.responses_max_stored;
  o.max_bytes = static_cast<uint64_t>(c.responses_max_mb) << 20;
  o.ttl_ms = c.responses_ttl_ms;
  if (!c.session_dir.empty()) o.dir = c.session_dir + "/responses";
  return std::make_shared<http::ResponseStore>(std::move(o));
}

// The APIs served, each a front end of its own (src/http/<api>/); the first is the default,
// whose shape a path no API claims gets. A new API is one more line here.
std::unique_ptr<http::ApiRouter> MakeRouter(const config::DaemonConfig& c, ServerContext& ctx,
                                            const http::ApiOptions& options) {
  auto router = std::make_unique<http::ApiRouter>(ctx, options);
  router->Register(std::make_unique<http::OpenAiRoutes>(ctx, options));
  router->Register(std::make_unique<http::ResponsesRoutes>(ctx, options, MakeResponseStore(c)));
  router->Register(std::make_unique<http::AnthropicRoutes>(ctx));
  router->Register(std::make_unique<http::OllamaRoutes>(ctx, options));
  return router;
}

void LogListening(const std::string& socket_path, const std::string& tcp_address, const std::string& ollama_address) {
  Log(LogLevel::kInfo, "http_listening",
      {{"socket", socket_path.empty() ? "off" : socket_path}, {"tcp", tcp_address.empty() ? "off" : tcp_address},
       {"ollama", ollama_address.empty() ? "off" : ollama_address}});
}

}  // namespace

Result<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(const config::DaemonConfig& c, ServerContext& ctx,
                                                          const transport::AccessPolicy& policy) {
  const std::string socket_path = config::HttpSocketPath(c);
  if (socket_path.empty() && c.http_listen.empty() && c.ollama_listen.empty()) return std::unique_ptr<HttpFrontend>();
  std::unique_ptr<HttpFrontend> f(new HttpFrontend());
  http::ServerOptions so;
  http::ApiOptions api;
  api.started_unix = static_cast<int64_t>(std::time(nullptr));
  if (!socket_path.empty()) {
    LLMD_ASSIGN_OR_RETURN(f->unix_, OpenHttpSocket(c, socket_path));
    so.unix_fd = f->unix_->fd();
  }
  std::string tcp_address;
  if (!c.http_listen.empty()) {
    LLMD_RETURN_IF_ERROR(ListenLoopback(c, c.http_listen, &api, &f->tcp_fd_, &tcp_address));
    so.tcp_fd = f->tcp_fd_;
  }
  std::string ollama_address;
  if (!c.ollama_listen.empty()) {
    LLMD_RETURN_IF_ERROR(
        ListenLoopback(c, c.ollama_listen, &api, &f->ollama_fd_, &ollama_address).WithContext("ollama_listen"));
    so.second_tcp_fd = f->ollama_fd_;
  }
  f->router_ = MakeRouter(c, ctx, api);
  ApplyConnectionLimits(c, &so);
  HttpFrontend* self = f.get();
  so.admit = [self, &policy](int fd) { return AdmitPeer(fd, policy, &self->reject_log_); };
  so.identify_tcp = [&policy](int fd) { return IdentifyTcpPeer(fd, policy); };
  http::ApiRouter* router = f->router_.get();
  so.handler = [router](const http::Request& req, http::Responder& out) { router->Handle(req, out); };
  so.error_body = [router](std::string_view path, const http::ApiError& e) { return router->ErrorBody(path, e); };
  LLMD_ASSIGN_OR_RETURN(f->server_, http::HttpServer::Start(std::move(so)));
  LogListening(socket_path, tcp_address, ollama_address);
  return f;
}

HttpFrontend::~HttpFrontend() { Stop(); }

void HttpFrontend::Stop() {
  if (server_) server_->Stop();
  server_.reset();
  if (unix_) unix_->Close();
  for (int* fd : {&tcp_fd_, &ollama_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace llmd::daemon
