#include "daemon/http_frontend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <exception>

#include "format/session_file.h"

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

}  // namespace

Result<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(const config::DaemonConfig& c, ServerContext& ctx,
                                                          const transport::AccessPolicy& policy) {
  const std::string socket_path = config::HttpSocketPath(c);
  if (socket_path.empty() && c.http_listen.empty() && c.ollama_listen.empty()) return std::unique_ptr<HttpFrontend>();
  std::unique_ptr<HttpFrontend> f(new HttpFrontend());
  http::ServerOptions so;
  http::ApiOptions api;
  api.started_unix = static_cast<int64_t>(std::time(nullptr));
  std::string tcp_address;
  if (!socket_path.empty()) {
    transport::ListenOptions lo;
    lo.path = socket_path;
    lo.mode = c.socket_mode;
    lo.group = c.socket_group;
    lo.allow_systemd = false;  // socket activation hands over the native socket only
    LLMD_ASSIGN_OR_RETURN(f->unix_, transport::UnixListener::Open(lo));
    so.unix_fd = f->unix_->fd();
  }
  // Each loopback listener: the Host headers a loopback client sends to it; anything else
  // may be DNS rebinding.
  auto listen_tcp = [&](const std::string& address, int* fd, std::string* bound) -> Status {
    if (api.api_key.empty()) {
      LLMD_ASSIGN_OR_RETURN(api.api_key, ReadApiKey(c.api_key_file));
    }
    int port = 0;
    LLMD_ASSIGN_OR_RETURN(*fd, http::ListenLoopbackTcp(address, &port));
    const std::string host = address.substr(0, address.rfind(':'));
    *bound = host + ":" + std::to_string(port);
    for (const std::string& name : {host, std::string("localhost"), std::string("127.0.0.1"), std::string("[::1]")}) {
      api.allowed_hosts.push_back(name + ":" + std::to_string(port));
    }
    for (const auto& extra : c.http_allowed_hosts) {
      api.allowed_hosts.push_back(extra);
      api.allowed_hosts.push_back(extra + ":" + std::to_string(port));
    }
    return Status::Ok();
  };
  std::string ollama_address;
  if (!c.http_listen.empty()) {
    LLMD_RETURN_IF_ERROR(listen_tcp(c.http_listen, &f->tcp_fd_, &tcp_address));
    so.tcp_fd = f->tcp_fd_;
  }
  if (!c.ollama_listen.empty()) {
    LLMD_RETURN_IF_ERROR(listen_tcp(c.ollama_listen, &f->ollama_fd_, &ollama_address).WithContext("ollama_listen"));
    so.second_tcp_fd = f->ollama_fd_;
  }
  f->routes_ = std::make_unique<http::OpenAiRoutes>(ctx, std::move(api));
  so.max_body_bytes = c.http_max_body_bytes;
  so.max_connections = c.http_max_connections;
  so.idle_timeout_ms = static_cast<int>(c.idle_timeout_ms);
  so.request_timeout_ms = static_cast<int>(c.frame_timeout_ms);
  so.write_timeout_ms = static_cast<int>(c.write_timeout_ms);
  HttpFrontend* self = f.get();
  so.admit = [self, &policy](int fd) -> std::optional<http::Peer> {
    auto peer = transport::GetPeerCred(fd);
    if (peer.has_value() && policy.Allows(*peer)) {
      return http::Peer{false, peer->uid, peer->gid, peer->pid};
    }
    long suppressed = 0;
    if (self->reject_log_.Allow(&suppressed)) {
      Log(LogLevel::kWarn, "peer_rejected",
          {{"api", "http"}, {"uid", peer.has_value() ? std::to_string(peer->uid) : "?"},
           {"pid", peer.has_value() ? std::to_string(peer->pid) : "?"}, {"suppressed", std::to_string(suppressed)}});
    }
    return std::nullopt;
  };
  http::OpenAiRoutes* routes = f->routes_.get();
  // The one place exceptions from the HTTP path stop (JSON, allocation): a 500, never a crash.
  so.handler = [routes](const http::Request& req, http::Responder& out) {
    try {
      routes->Handle(req, out);
    } catch (const std::exception& e) {
      Log(LogLevel::kError, "http_handler_exception", {{"path", req.path}, {"what", e.what()}});
      out.Send(500, "application/json",
               R"({"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}})");
    }
  };
  LLMD_ASSIGN_OR_RETURN(f->server_, http::HttpServer::Start(std::move(so)));
  Log(LogLevel::kInfo, "http_listening",
      {{"socket", socket_path.empty() ? "off" : socket_path}, {"tcp", tcp_address.empty() ? "off" : tcp_address},
       {"ollama", ollama_address.empty() ? "off" : ollama_address}});
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
