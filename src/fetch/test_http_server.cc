// TestHttpServer: blocking sockets, one thread per connection.
// Thread-safety: all state behind mu_ (test_http_server.h).
#include "fetch/test_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

namespace llmd::fetch::testing {
namespace {

constexpr auto kLiveness = std::chrono::seconds(60);

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Half-closes, then reads until the client closes, so no unread byte turns our close into a
// reset that could discard body bytes still in flight.
void Finish(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[4096];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
  }
  ::close(fd);
}

std::string Head(int status, const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string reason = status == 200   ? "OK"
                       : status == 206 ? "Partial Content"
                       : status == 302 ? "Found"
                       : status == 416 ? "Range Not Satisfiable"
                                       : "Error";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
  for (const auto& [name, value] : headers) out += name + ": " + value + "\r\n";
  return out + "Connection: close\r\n\r\n";
}

// "bytes=N-" -> N; anything else -> nullopt (the client only ever sends that form).
std::optional<size_t> RangeFrom(const std::string& range) {
  if (!range.starts_with("bytes=") || !range.ends_with("-")) return std::nullopt;
  std::string digits = range.substr(6, range.size() - 7);
  if (digits.empty()) return std::nullopt;
  return static_cast<size_t>(std::stoull(digits));
}

std::string HeaderValue(const std::string& head, const std::string& lower_name) {
  size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string::npos) {
    pos += 2;
    size_t colon = head.find(':', pos);
    size_t eol = head.find("\r\n", pos);
    if (colon == std::string::npos || eol == std::string::npos || colon > eol) continue;
    std::string name = head.substr(pos, colon - pos);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == lower_name) {
      std::string v = head.substr(colon + 1, eol - colon - 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      return v;
    }
  }
  return "";
}

}  // namespace

TestHttpServer::TestHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("TestHttpServer: cannot listen on 127.0.0.1");
    std::abort();  // no test can run without it
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TestHttpServer::~TestHttpServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    gate_open_ = true;
  }
  cv_.notify_all();
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes the blocked accept()
  acceptor_.join();
  for (std::thread& t : connections_) t.join();  // the acceptor is gone: nobody adds more
  ::close(listen_fd_);
}

std::string TestHttpServer::Url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void TestHttpServer::Serve(const std::string& path, Resource r) {
  std::lock_guard<std::mutex> lock(mu_);
  resources_[path] = std::move(r);
  served_[path] = 0;
}

std::vector<LoggedRequest> TestHttpServer::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

std::vector<LoggedRequest> TestHttpServer::RequestsFor(std::string_view path) const {
  std::vector<LoggedRequest> out;
  for (LoggedRequest& r : Requests()) {
    if (r.path == path) out.push_back(std::move(r));
  }
  return out;
}

bool TestHttpServer::WaitForRequests(std::string_view path, size_t n) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, kLiveness, [&] {
    size_t count = 0;
    for (const LoggedRequest& r : log_) count += r.path == path ? 1 : 0;
    return count >= n;
  });
}

bool TestHttpServer::WaitForGate() const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, kLiveness, [&] { return gate_reached_; });
}

void TestHttpServer::OpenGate() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    gate_open_ = true;
  }
  cv_.notify_all();
}

bool TestHttpServer::WaitAtGate() {
  std::unique_lock<std::mutex> lock(mu_);
  gate_reached_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return gate_open_ || stopping_; });
  return !stopping_;
}

void TestHttpServer::AcceptLoop() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0 && errno == EINTR) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (fd < 0 || stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    connections_.emplace_back([this, fd] { Handle(fd); });
  }
}

void TestHttpServer::Handle(int fd) {
  std::string head;
  char buf[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  size_t sp1 = head.find(' ');
  size_t sp2 = head.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    ::close(fd);
    return;
  }
  LoggedRequest req{head.substr(0, sp1), head.substr(sp1 + 1, sp2 - sp1 - 1),
                    HeaderValue(head, "range")};
  req.path = req.path.substr(0, req.path.find('?'));
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(req);
  }
  cv_.notify_all();
  Respond(fd, req.path, req.range);
  Finish(fd);
}

void TestHttpServer::Respond(int fd, const std::string& path, const std::string& range) {
  Resource r{"no such resource\n", Mode::kStatus, 404, ""};
  int nth = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(path);
    if (it != resources_.end()) {
      r = it->second;
      nth = served_[path]++;
    }
  }
  const size_t size = r.body.size();
  std::optional<size_t> from = RangeFrom(range);
  if (r.mode == Mode::kRedirect) {
    SendAll(fd, Head(302, {{"Location", r.location}, {"Content-Length", "0"}}));
    return;
  }
  if (r.mode == Mode::kStatus) {
    SendAll(fd,
            Head(static_cast<int>(r.param), {{"Content-Length", std::to_string(size)}}) + r.body);
    return;
  }
  if (r.mode == Mode::kNoLength) {
    SendAll(fd, Head(200, {}) + r.body);
    return;
  }
  if (r.mode == Mode::kIgnoreRange) from.reset();
  if (r.mode == Mode::kBadContentRange && from) {
    SendAll(fd, Head(206, {{"Content-Range",
                            "bytes 0-" + std::to_string(size - 1) + "/" + std::to_string(size)},
                           {"Content-Length", std::to_string(size)}}) +
                    r.body);
    return;
  }
  if (r.mode == Mode::kCorruptByte && r.param < size)
    r.body[r.param] = static_cast<char>(r.body[r.param] ^ 0x5A);
  if (from && *from >= size) {
    SendAll(fd, Head(416, {{"Content-Range", "bytes */" + std::to_string(size)},
                           {"Content-Length", "0"}}));
    return;
  }
  const size_t start = from.value_or(0);
  size_t announced = size - start;
  if (r.mode == Mode::kLieShort) announced += r.param;
  if (r.mode == Mode::kLieLong) announced -= std::min(announced, r.param);
  std::vector<std::pair<std::string, std::string>> headers{
      {"Content-Length", std::to_string(announced)}};
  if (from) {
    headers.emplace_back("Content-Range", "bytes " + std::to_string(start) + "-" +
                                              std::to_string(size - 1) + "/" +
                                              std::to_string(size));
  }
  if (!SendAll(fd, Head(from ? 206 : 200, headers))) return;
  size_t stop = size;
  if (r.mode == Mode::kDropAfter && nth == 0) stop = std::min(stop, std::max(start, r.param));
  size_t at = start;
  if (r.mode == Mode::kGate) {
    const size_t gate = std::max(start, std::min(r.param, size));
    if (!SendAll(fd, std::string_view(r.body).substr(at, gate - at)) || !WaitAtGate()) return;
    at = gate;
  }
  SendAll(fd, std::string_view(r.body).substr(at, stop - at));
}

}  // namespace llmd::fetch::testing
