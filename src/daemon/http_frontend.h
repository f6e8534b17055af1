// HttpFrontend: the daemon's HTTP API. Opens its Unix socket (same mode, group, lock-file
// rules and credential allowlist as the native socket) and, when configured, loopback TCP
// listeners (http_listen, and ollama_listen where Ollama clients look), whose peers are
// identified by UID from the kernel's socket table and held to the same allowlist, or to the
// API key when api_key_file is set; then serves the ApiRouter (the OpenAI, Responses,
// Anthropic and Ollama APIs) on all of them.
//
// Thread-safety: Start and Stop on the daemon's main thread. Lifetime: `ctx` and `policy`
// must outlive this.
#ifndef LLMD_DAEMON_HTTP_FRONTEND_H_
#define LLMD_DAEMON_HTTP_FRONTEND_H_

#include <memory>

#include "common/log.h"
#include "config/config.h"
#include "http/http_server.h"
#include "http/api_router.h"
#include "daemon/server_context.h"
#include "transport/peer_cred.h"
#include "transport/unix_listener.h"

namespace llmd::daemon {

class HttpFrontend {
 public:
  // Null (and OK) when both the HTTP socket and TCP are off.
  static Result<std::unique_ptr<HttpFrontend>> Start(const config::DaemonConfig& config,
                                                     ServerContext& ctx,
                                                     const transport::AccessPolicy& policy);
  ~HttpFrontend();
  // Stops accepting, waits for open connections to finish, removes the socket node.
  void Stop();

 private:
  HttpFrontend() = default;
  std::unique_ptr<transport::UnixListener> unix_;
  int tcp_fd_ = -1;
  int ollama_fd_ = -1;  // ollama_listen
  std::unique_ptr<http::ApiRouter> router_;
  std::unique_ptr<http::HttpServer> server_;
  LogRateLimiter reject_log_{1000};  // accept thread only
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_HTTP_FRONTEND_H_
