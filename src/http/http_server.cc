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
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/handler_threads.h"
#include "common/log.h"
#include "http/api_error.h"
#include "http/connection_budget.h"

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

// `text` as the inside of a JSON string (a query parameter's name can hold a quote).
std::string JsonEscaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      out += esc;
      continue;
    }
    out += c;
  }
  return out;
}

// The body of an error the server itself sends: in the shape of the API `path` belongs to when
// the owner said how (ServerOptions::error_body), else OpenAI's.
std::string ServerErrorBody(const ServerOptions& options, std::string_view path, int status, std::string message,
                            const char* code) {
  const ApiError e{status, "invalid_request_error", code, std::move(message), {}};
  if (options.error_body) return options.error_body(path, e);
  return "{\"error\":{\"message\":\"" + JsonEscaped(e.message) + "\",\"type\":\"" + e.type +
         "\",\"param\":null,\"code\":\"" + e.code + "\"}}";
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

// Starts a task on a server thread, counted as the connection's; false when none is free.
using StartThreadFn = std::function<bool(const std::function<void()>&)>;

class ConnectionResponder final : public Responder {
 public:
  // `start_thread`: the server's, for StartThread; null: none. `close_on_refusal`: a 401 or
  // 403 ends the connection (a TCP peer that has not shown it may use the API).
  ConnectionResponder(int fd, int write_ms, bool keep_alive, StartThreadFn start_thread = nullptr,
                      bool close_on_refusal = false)
      : fd_(fd),
        write_ms_(write_ms),
        keep_alive_(keep_alive),
        start_thread_(std::move(start_thread)),
        close_on_refusal_(close_on_refusal) {}

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
  bool StartThread(const std::function<void()>& task) override { return start_thread_ && start_thread_(task); }

  bool ok() const { return ok_; }
  bool responded() const { return state_ == State::kDone; }
  bool keep_alive() const { return keep_alive_; }

 private:
  enum class State { kNone, kStreaming, kDone };
  std::string Head(int status, std::string_view content_type, const Headers& extra) {
    if (close_on_refusal_ && (status == 401 || status == 403)) keep_alive_ = false;
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
  const StartThreadFn start_thread_;
  const bool close_on_refusal_;
  bool ok_ = true;
  State state_ = State::kNone;
};

using Parser = bhttp::request_parser<bhttp::string_body>;

// One request being read: its parser, and the times by which its parts must arrive.
struct RequestRead {
  Parser parser;
  int64_t start_by = 0;    // its first byte
  int64_t headers_by = 0;  // the end of its headers; 0: header_timeout_ms after the first byte
  int64_t request_by = 0;  // its last byte; 0 until the first byte is here
  bool headers_seen = false;
  bool sent_continue = false;
  Status query_error = Status::Ok();  // the request's query string is malformed

  int64_t Deadline() const {
    if (request_by == 0) return start_by;
    return headers_seen ? request_by : std::min(headers_by, request_by);
  }
};

// The target's path, without its query string.
std::string PathOf(boost::beast::string_view target) {
  const std::string_view t(target.data(), target.size());
  return std::string(t.substr(0, t.find('?')));
}

// What follows the target's first '?' ("" when there is none).
std::string_view RawQueryOf(boost::beast::string_view target) {
  const std::string_view t(target.data(), target.size());
  const size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

}  // namespace

std::string Request::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

struct HttpServer::Impl {
  Impl(ServerOptions o, size_t unidentified)
      : options(std::move(o)), budget(options.max_connections, unidentified), handlers(options.max_connections) {}

  using Pool = ConnectionBudget::Pool;
  // A connection's slot, shared by its thread and the functions it hands out.
  using SlotPtr = std::shared_ptr<ConnectionBudget::Slot>;

  ServerOptions options;
  std::atomic<bool> stopping{false};
  std::thread accept_thread;
  ConnectionBudget budget;  // who may hold the connections; outlives the threads holding its slots
  HandlerThreads handlers;  // one per connection, joined at Stop

  enum class ReadEnd { kRequest, kClosed, kTimeout, kStopped, kBodyTooLarge, kHeaderTooLarge, kBad, kOverBudget };
  // Asked once a request's headers are in; false refuses it (over its budget).
  using HeadersDone = std::function<bool()>;

  // The request's first byte is here: its deadlines start.
  void Begin(RequestRead& rr) const {
    if (rr.request_by != 0) return;
    const int64_t now = NowMs();
    rr.request_by = now + options.request_timeout_ms;
    const int64_t headers_by = now + options.header_timeout_ms;
    rr.headers_by = rr.headers_by == 0 ? headers_by : std::min(rr.headers_by, headers_by);
  }

  // The request the parser holds. A malformed query string leaves `query_error` set (the
  // request was read whole, so the connection may go on after the 400).
  static void TakeRequest(Parser& parser, Request* out, bool* keep_alive, Status* query_error) {
    auto msg = parser.release();
    out->method = std::string(msg.method_string());
    out->path = PathOf(msg.target());
    auto query = ParseQueryString(RawQueryOf(msg.target()));
    if (query.has_value()) out->query = std::move(*query);
    else *query_error = query.error();
    for (const auto& field : msg) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      out->headers[name] = std::string(field.value());
    }
    *keep_alive = msg.keep_alive();
    out->body = std::move(msg.body());
  }

  // Feeds what `buf` holds to the parser. A ReadEnd once the request has ended (whole, refused
  // or malformed); nullopt while more is needed.
  std::optional<ReadEnd> Parse(int fd, std::string& buf, RequestRead& rr, const HeadersDone& headers_done,
                               Request* out, bool* keep_alive, std::string* error) const {
    boost::beast::error_code ec;
    const size_t used = rr.parser.put(boost::asio::buffer(buf.data(), buf.size()), ec);
    buf.erase(0, used);
    if (ec == bhttp::error::body_limit) return ReadEnd::kBodyTooLarge;
    if (ec == bhttp::error::header_limit) return ReadEnd::kHeaderTooLarge;
    if (ec && ec != bhttp::error::need_more) {
      *error = ec.message();
      return ReadEnd::kBad;
    }
    if (rr.parser.is_header_done() && !rr.headers_seen) {
      rr.headers_seen = true;
      out->path = PathOf(rr.parser.get().target());
      if (!headers_done()) return ReadEnd::kOverBudget;
    }
    if (rr.parser.is_done()) {
      TakeRequest(rr.parser, out, keep_alive, &rr.query_error);
      return ReadEnd::kRequest;
    }
    if (rr.headers_seen && !rr.sent_continue) {
      rr.sent_continue = true;
      if (boost::beast::iequals(rr.parser.get()[bhttp::field::expect], "100-continue")) {
        (void)WriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n", options.write_timeout_ms);
      }
    }
    if (ec != bhttp::error::need_more && used == 0) {
      *error = "unparsable request";
      return ReadEnd::kBad;
    }
    return std::nullopt;
  }

  // Reads one request from `fd` by the deadlines in `rr`; `buf` keeps bytes that arrived past
  // it (pipelining).
  ReadEnd ReadRequest(int fd, std::string& buf, RequestRead& rr, const HeadersDone& headers_done, Request* out,
                      bool* keep_alive, std::string* error) {
    rr.parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
    rr.parser.body_limit(options.max_body_bytes);
    rr.parser.eager(true);
    while (true) {
      if (!buf.empty()) {
        Begin(rr);
        if (auto end = Parse(fd, buf, rr, headers_done, out, keep_alive, error)) return *end;
      }
      const int64_t left = rr.Deadline() - NowMs();
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
      Begin(rr);
      buf.append(chunk, static_cast<size_t>(n));
    }
  }

  // The server's answer to a request that did not arrive whole, or was refused on its headers.
  void AnswerUnread(ReadEnd end, const RequestRead& rr, const std::string& path, ConnectionResponder& r) const {
    const char* json = "application/json";
    switch (end) {
      case ReadEnd::kBodyTooLarge:
        r.Send(413, json,
               ServerErrorBody(options, path, 413, "request body over " + std::to_string(options.max_body_bytes) + " bytes",
                               "request_too_large"));
        return;
      case ReadEnd::kHeaderTooLarge:
        r.Send(431, json,
               ServerErrorBody(options, path, 431,
                               "request header over " + std::to_string(options.max_header_bytes) + " bytes",
                               "header_too_large"));
        return;
      case ReadEnd::kBad:
        r.Send(400, json, ServerErrorBody(options, path, 400, "malformed HTTP request", "bad_request"));
        return;
      case ReadEnd::kOverBudget:
        r.Send(503, json, ServerErrorBody(options, path, 503, "too many connections from this user; retry later", "busy"),
               {{"Retry-After", "1"}});
        return;
      case ReadEnd::kTimeout:
        // A request that started gets told; a connection that never sent a byte is just closed.
        if (rr.request_by != 0) {
          r.Send(408, json, ServerErrorBody(options, path, 408, "the request did not arrive in time", "request_timeout"));
        }
        return;
      case ReadEnd::kRequest:
      case ReadEnd::kClosed:
      case ReadEnd::kStopped:
        return;
    }
  }

  // Runs `task` on a server thread charged to the same holder and pool as `like`.
  bool StartExtraThread(const ConnectionBudget::Slot& like, const std::function<void()>& task) {
    auto extra = budget.TakeAnother(like);
    if (!extra.has_value()) return false;
    auto held = std::make_shared<ConnectionBudget::Slot>(std::move(*extra));
    return handlers.TryStart([task, held]() mutable {
      task();
      held.reset();
    });
  }

  // Serves `fd`'s requests until it closes, errs or stops. A TCP connection's first request
  // must show its headers within header_timeout_ms of `accepted_ms`; then its slot moves to
  // its UID's share (a peer with no UID stays in the unidentified pool).
  void Serve(int fd, const Peer& peer, const SlotPtr& slot, int64_t accepted_ms) {
    std::string buf;
    const StartThreadFn start_thread = [this, slot](const std::function<void()>& task) {
      return StartExtraThread(*slot, task);
    };
    const HeadersDone headers_done = [&] { return !peer.identified || budget.Promote(*slot); };
    for (bool first = true; !stopping.load(); first = false) {
      Request req;
      req.peer = peer;
      bool keep_alive = false;
      std::string error;
      RequestRead rr;
      const bool unshown = first && peer.tcp;
      rr.start_by = unshown ? accepted_ms + options.header_timeout_ms : NowMs() + options.idle_timeout_ms;
      rr.headers_by = unshown ? rr.start_by : 0;
      const ReadEnd end = ReadRequest(fd, buf, rr, headers_done, &req, &keep_alive, &error);
      ConnectionResponder r(fd, options.write_timeout_ms, keep_alive && end == ReadEnd::kRequest, start_thread, peer.tcp);
      if (end != ReadEnd::kRequest) return AnswerUnread(end, rr, req.path, r);
      if (!rr.query_error.ok()) {
        r.Send(400, "application/json",
               ServerErrorBody(options, req.path, 400, rr.query_error.message(), "invalid_query_string"));
      } else {
        options.handler(req, r);
      }
      if (!r.responded() && r.ok()) {
        r.Send(500, "application/json",
               ServerErrorBody(options, req.path, 500, "the handler sent no response", "internal_error"));
      }
      if (!r.ok() || !r.keep_alive()) return;
    }
  }

  // Who the peer of a new connection is; nullopt: close it unread (a Unix-socket peer the
  // allowlist refuses).
  std::optional<Peer> PeerOf(int fd, bool tcp) const {
    if (tcp) {
      Peer peer = options.identify_tcp ? options.identify_tcp(fd) : Peer{};
      peer.tcp = true;
      return peer;
    }
    std::optional<Peer> peer = options.admit ? options.admit(fd) : std::nullopt;
    if (peer.has_value()) {
      peer->tcp = false;
      peer->identified = peer->allowed = true;  // SO_PEERCRED, checked by `admit`
    }
    return peer;
  }

  // Over the budget: a 503, in the shape of the API the request is for when its first line is
  // already here, then close. A Unix-socket peer is given a moment to send that line; a TCP one
  // is not, so a flood of silent connections cannot hold the accept thread.
  void RefuseBusy(int fd, bool tcp) const {
    ConnectionResponder r(fd, 100, false);
    const std::string body =
        ServerErrorBody(options, PeekPath(fd, tcp ? 0 : 50), 503, "too many connections; retry later", "busy");
    r.Send(503, "application/json", body, {{"Retry-After", "1"}});
    ::close(fd);
  }

  void Accept(int listener, bool tcp) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    const int64_t accepted_ms = NowMs();
    const std::optional<Peer> peer = PeerOf(fd, tcp);
    if (!peer.has_value()) {
      ::close(fd);
      return;
    }
    const uint64_t holder = peer->identified ? peer->uid : ConnectionBudget::kNoUid;
    if (auto taken = budget.Take(tcp ? Pool::kUnidentified : Pool::kIdentified, holder)) {
      auto slot = std::make_shared<ConnectionBudget::Slot>(std::move(*taken));
      const bool started = handlers.TryStart([this, fd, peer = *peer, slot, accepted_ms]() mutable {
        Serve(fd, peer, slot, accepted_ms);
        ::close(fd);
        slot.reset();  // before the thread counts as done, so the budget is never the tighter
      });
      if (started) return;
    }
    RefuseBusy(fd, tcp);
  }

  void AcceptLoop() {
    while (!stopping.load()) {
      pollfd fds[3] = {{options.unix_fd, POLLIN, 0}, {options.tcp_fd, POLLIN, 0}, {options.second_tcp_fd, POLLIN, 0}};
      if (::poll(fds, 3, 200) <= 0) {
        handlers.Reap();
        continue;
      }
      for (int i = 0; i < 3; ++i) {
        if (fds[i].fd >= 0 && (fds[i].revents & POLLIN)) Accept(fds[i].fd, /*tcp=*/i >= 1);
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
  // TCP connections start in the unidentified pool; the Unix socket's never use it.
  const bool tcp = options.tcp_fd >= 0 || options.second_tcp_fd >= 0;
  if (tcp && (options.max_unidentified_connections == 0 ||
              options.max_unidentified_connections >= options.max_connections)) {
    return InvalidArgumentError("the unidentified connections (" + std::to_string(options.max_unidentified_connections) +
                                ") must be at least 1 and fewer than all connections (" +
                                std::to_string(options.max_connections) + ")");
  }
  const size_t unidentified = tcp ? options.max_unidentified_connections : 0;
  auto impl = std::make_unique<Impl>(std::move(options), unidentified);
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
