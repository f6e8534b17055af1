#include "http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/handler_threads.h"
#include "common/log.h"
#include "http/api_error.h"

namespace llmd::http {
namespace {

namespace bhttp = boost::beast::http;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Writes all of `data` within `timeout_ms`; false when the peer is gone or too slow.
bool WriteAll(int fd, std::string_view data, int timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const int64_t left = deadline - NowMs();
      if (left <= 0) return false;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(left));
      continue;
    }
    return false;
  }
  return true;
}

std::string StatusLine(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " +
         std::string(bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(status)))) + "\r\n";
}

// The body of an error the server itself sends (no client text in it): in the shape of the API
// `path` belongs to when the owner said how (ServerOptions::error_body), else OpenAI's.
std::string ServerErrorBody(const ServerOptions& options, std::string_view path, int status, std::string message,
                            const char* code) {
  const ApiError e{status, "invalid_request_error", code, std::move(message), {}};
  if (options.error_body) return options.error_body(path, e);
  return "{\"error\":{\"message\":\"" + e.message + "\",\"type\":\"" + e.type + "\",\"param\":null,\"code\":\"" +
         e.code + "\"}}";
}

// The path of the request waiting on `fd`, read without taking it (the request line, if it
// arrives within `wait_ms`); "" when it does not.
std::string PeekPath(int fd, int wait_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return "";
  char buf[1024];
  const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK);
  if (n <= 0) return "";
  const std::string_view line(buf, static_cast<size_t>(n));
  const size_t start = line.find(' ');
  if (start == std::string_view::npos) return "";
  const size_t end = line.find_first_of(" ?\r\n", start + 1);
  if (end == std::string_view::npos) return "";
  return std::string(line.substr(start + 1, end - start - 1));
}

class ConnectionResponder final : public Responder {
 public:
  // `threads`: the server's, for StartThread; null: none.
  ConnectionResponder(int fd, int write_ms, bool keep_alive, HandlerThreads* threads = nullptr)
      : fd_(fd), write_ms_(write_ms), keep_alive_(keep_alive), threads_(threads) {}

  bool Send(int status, std::string_view content_type, std::string_view body, const Headers& extra = {}) override {
    if (state_ != State::kNone) return false;
    state_ = State::kDone;
    std::string out = Head(status, content_type, extra) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    out.append(body);
    return Write(out);
  }
  bool BeginStream(int status, std::string_view content_type, const Headers& extra = {}) override {
    if (state_ != State::kNone) return false;
    state_ = State::kStreaming;
    return Write(Head(status, content_type, extra) + "Transfer-Encoding: chunked\r\n\r\n");
  }
  bool WriteChunk(std::string_view data) override {
    if (state_ != State::kStreaming) return false;
    if (data.empty()) return ok_;
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out = size;
    out.append(data);
    out += "\r\n";
    return Write(out);
  }
  bool EndStream() override {
    if (state_ != State::kStreaming) return false;
    state_ = State::kDone;
    return Write("0\r\n\r\n");
  }
  int fd() const override { return fd_; }
  bool StartThread(const std::function<void()>& task) override {
    return threads_ != nullptr && threads_->TryStart(task);
  }

  bool ok() const { return ok_; }
  bool responded() const { return state_ == State::kDone; }
  bool keep_alive() const { return keep_alive_; }

 private:
  enum class State { kNone, kStreaming, kDone };
  std::string Head(int status, std::string_view content_type, const Headers& extra) const {
    std::string h = StatusLine(status) + "Server: llmd\r\nContent-Type: " + std::string(content_type) + "\r\n";
    for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
    if (!keep_alive_) h += "Connection: close\r\n";
    return h;
  }
  bool Write(std::string_view data) {
    if (ok_) ok_ = WriteAll(fd_, data, write_ms_);
    return ok_;
  }

  const int fd_;
  const int write_ms_;
  bool keep_alive_;
  HandlerThreads* const threads_;
  bool ok_ = true;
  State state_ = State::kNone;
};

}  // namespace

std::string Request::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

struct HttpServer::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), handlers(options.max_connections) {}

  ServerOptions options;
  std::atomic<bool> stopping{false};
  std::thread accept_thread;
  HandlerThreads handlers;  // one per connection, joined at Stop

  enum class ReadEnd { kRequest, kClosed, kTimeout, kStopped, kBodyTooLarge, kHeaderTooLarge, kBad };

  // Reads one request from `fd`; `buf` keeps bytes that arrived past it (pipelining).
  ReadEnd ReadRequest(int fd, std::string& buf, Request* out, bool* keep_alive, std::string* error) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    parser.body_limit(options.max_body_bytes);
    parser.eager(true);
    const int64_t idle_deadline = NowMs() + options.idle_timeout_ms;
    int64_t request_deadline = 0;  // set when the request's first byte is here
    bool sent_continue = false;
    while (true) {
      if (!buf.empty()) {
        if (request_deadline == 0) request_deadline = NowMs() + options.request_timeout_ms;
        boost::beast::error_code ec;
        size_t used = parser.put(boost::asio::buffer(buf.data(), buf.size()), ec);
        buf.erase(0, used);
        if (ec == bhttp::error::body_limit) return ReadEnd::kBodyTooLarge;
        if (ec == bhttp::error::header_limit) return ReadEnd::kHeaderTooLarge;
        if (ec && ec != bhttp::error::need_more) {
          *error = ec.message();
          return ReadEnd::kBad;
        }
        if (parser.is_done()) {
          auto msg = parser.release();
          out->method = std::string(msg.method_string());
          std::string target(msg.target());
          out->path = target.substr(0, target.find('?'));
          for (const auto& field : msg) {
            std::string name(field.name_string());
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            out->headers[name] = std::string(field.value());
          }
          *keep_alive = msg.keep_alive();
          out->body = std::move(msg.body());
          return ReadEnd::kRequest;
        }
        if (parser.is_header_done() && !sent_continue) {
          sent_continue = true;
          auto expect = parser.get()[bhttp::field::expect];
          if (boost::beast::iequals(expect, "100-continue")) {
            (void)WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n", options.write_timeout_ms);
          }
        }
        if (ec != bhttp::error::need_more && used == 0) {
          *error = "unparsable request";
          return ReadEnd::kBad;
        }
      }
      const int64_t left = (request_deadline ? request_deadline : idle_deadline) - NowMs();
      if (left <= 0) return ReadEnd::kTimeout;
      if (stopping.load()) return ReadEnd::kStopped;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100))) <= 0) continue;
      char chunk[16384];
      ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n == 0) return ReadEnd::kClosed;
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        return ReadEnd::kClosed;
      }
      if (request_deadline == 0) request_deadline = NowMs() + options.request_timeout_ms;
      buf.append(chunk, static_cast<size_t>(n));
    }
  }

  void Serve(int fd, const Peer& peer) {
    std::string buf;
    while (!stopping.load()) {
      Request req;
      req.peer = peer;
      bool keep_alive = false;
      std::string error;
      const ReadEnd end = ReadRequest(fd, buf, &req, &keep_alive, &error);
      ConnectionResponder r(fd, options.write_timeout_ms, keep_alive && end == ReadEnd::kRequest, &handlers);
      const char* json = "application/json";
      switch (end) {
        case ReadEnd::kRequest:
          options.handler(req, r);
          if (!r.responded() && r.ok()) {
            r.Send(500, json, ServerErrorBody(options, req.path, 500, "the handler sent no response", "internal_error"));
          }
          if (!r.ok() || !r.keep_alive()) return;
          continue;
        case ReadEnd::kBodyTooLarge:
          r.Send(413, json,
                 ServerErrorBody(options, req.path, 413,
                                 "request body over " + std::to_string(options.max_body_bytes) + " bytes",
                                 "request_too_large"));
          return;
        case ReadEnd::kHeaderTooLarge:
          r.Send(431, json,
                 ServerErrorBody(options, req.path, 431,
                                 "request header over " + std::to_string(options.max_header_bytes) + " bytes",
                                 "header_too_large"));
          return;
        case ReadEnd::kBad:
          r.Send(400, json, ServerErrorBody(options, req.path, 400, "malformed HTTP request", "bad_request"));
          return;
        case ReadEnd::kTimeout:
          if (!buf.empty()) {
            r.Send(408, json, ServerErrorBody(options, req.path, 408, "the request did not arrive in time", "request_timeout"));
          }
          return;
        case ReadEnd::kClosed:
        case ReadEnd::kStopped:
          return;
      }
    }
  }

  void AcceptLoop() {
    while (!stopping.load()) {
      pollfd fds[3] = {{options.unix_fd, POLLIN, 0}, {options.tcp_fd, POLLIN, 0}, {options.second_tcp_fd, POLLIN, 0}};
      if (::poll(fds, 3, 200) <= 0) {
        handlers.Reap();
        continue;
      }
      for (int i = 0; i < 3; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & POLLIN)) continue;
        int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) continue;
        Peer peer;
        peer.tcp = i >= 1;
        if (!peer.tcp) {
          auto allowed = options.admit ? options.admit(fd) : std::nullopt;
          if (!allowed) {
            ::close(fd);
            continue;
          }
          peer = *allowed;
        }
        const bool started = handlers.TryStart([this, fd, peer] {
          Serve(fd, peer);
          ::close(fd);
        });
        if (!started) {
          ConnectionResponder r(fd, 100, false);
          // Answered in the shape of the API the request is for, when its first line comes soon.
          const std::string body =
              ServerErrorBody(options, PeekPath(fd, 50), 503, "too many connections; retry later", "busy");
          r.Send(503, "application/json", body, {{"Retry-After", "1"}});
          ::close(fd);
        }
      }
      handlers.Reap();
    }
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(ServerOptions options) {
  if (options.unix_fd < 0 && options.tcp_fd < 0 && options.second_tcp_fd < 0) {
    return InvalidArgumentError("no socket to serve HTTP on");
  }
  if (!options.handler) return InvalidArgumentError("no HTTP handler");
  auto impl = std::make_unique<Impl>(std::move(options));
  Impl* raw = impl.get();
  impl->accept_thread = std::thread([raw] { raw->AcceptLoop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  impl_->handlers.JoinAll();  // each handler sees `stopping` and returns
}

Result<int> ListenLoopbackTcp(const std::string& host_port, int* bound_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("http_listen must be HOST:PORT, got '" + host_port + "'");
  std::string host = host_port.substr(0, colon);
  const std::string port_text = host_port.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535) {
    return InvalidArgumentError("http_listen port must be 0..65535, got '" + port_text + "'");
  }
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&addr);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6->sin6_addr) != 1 ||
        !IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr)) {
      return InvalidArgumentError("http_listen must be a loopback address ([::1]), got '" + host + "'");
    }
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&addr);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) != 1 || (ntohl(a4->sin_addr.s_addr) >> 24) != 127) {
      return InvalidArgumentError("http_listen must be a loopback address (127.0.0.0/8, [::1] or localhost), got '" +
                                  host + "'; the API is local only");
    }
    len = sizeof *a4;
  }
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return InternalError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    int err = errno;
    ::close(fd);
    return UnavailableError("cannot listen on " + host_port + ": " + std::strerror(err));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  *bound_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

}  // namespace llmd::http
