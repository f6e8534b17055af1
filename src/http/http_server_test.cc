// HttpServer over a real socket pair: a listening Unix socket in a temp dir, raw bytes in.
#include "http/http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "http/openai/openai_routes.h"
#include "tests/support/wait_for.h"

namespace llmd::http {
namespace {

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/llmd-http-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/http.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listen_fd_, 16), 0);
  }
  void TearDown() override {
    server_.reset();
    ::close(listen_fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  void Start(ServerOptions o) {
    o.unix_fd = listen_fd_;
    o.admit = [](int) { return std::optional<Peer>(Peer{false, 1000, 1000, 1}); };
    if (!o.handler) {
      o.handler = [](const Request& req, Responder& out) {
        out.Send(200, "text/plain", req.method + " " + req.path + " " + std::to_string(req.body.size()) +
                                        " uid=" + std::to_string(req.peer.uid));
      };
    }
    auto s = HttpServer::Start(std::move(o));
    ASSERT_TRUE(s.has_value());
    server_ = std::move(*s);
  }
  int Connect() {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  // Sends `bytes` and reads until the server closes or `limit` passes (a liveness bound: every
  // exchange here ends with the server closing).
  std::string Exchange(const std::string& bytes, int limit_ms = llmd::testing::kLivenessMillis) {
    int fd = Connect();
    // MSG_NOSIGNAL: a server that refuses (503 over the cap) may close before we write.
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string got = ReadUntilClose(fd, limit_ms);
    ::close(fd);
    return got;
  }
  static std::string ReadUntilClose(int fd, int limit_ms) {
    std::string got;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }

  std::string dir_, path_;
  int listen_fd_ = -1;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesKeepAliveRequestsAndPassesThePeer) {
  Start({});
  std::string got = Exchange(
      "GET /a?x=1 HTTP/1.1\r\nHost: l\r\n\r\n"
      "POST /b HTTP/1.1\r\nHost: l\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc");
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("GET /a 0 uid=1000"), std::string::npos) << got;
  EXPECT_NE(got.find("POST /b 3 uid=1000"), std::string::npos) << got;
}

TEST_F(HttpServerTest, PassesTheQueryParsedAndAnswersAMalformedOneWith400) {
  ServerOptions o;
  o.handler = [](const Request& req, Responder& out) {
    std::string text = req.path;
    for (const QueryParam& p : req.query) text += " [" + p.name + "=" + p.value + "]";
    out.Send(200, "text/plain", text);
  };
  Start(std::move(o));
  // The 400 comes from the server, and the connection goes on to the next request.
  std::string got = Exchange(
      "GET /v1/x?limit=2&after=msg%5F1&q=a+b HTTP/1.1\r\nHost: l\r\n\r\n"
      "GET /v1/x?bad=%zz HTTP/1.1\r\nHost: l\r\n\r\n"
      "GET /v1/y HTTP/1.1\r\nHost: l\r\nConnection: close\r\n\r\n");
  EXPECT_NE(got.find("/v1/x [limit=2] [after=msg_1] [q=a b]"), std::string::npos) << got;
  EXPECT_NE(got.find("HTTP/1.1 400"), std::string::npos) << got;
  EXPECT_NE(got.find("\"code\":\"invalid_query_string\""), std::string::npos) << got;
  EXPECT_NE(got.find("malformed query string: the value of 'bad' has a '%' not followed by two hex digits"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("\r\n\r\n/v1/y"), std::string::npos) << got;
}

TEST_F(HttpServerTest, AnswersChunkedBodies) {
  Start({});
  std::string got = Exchange(
      "POST /c HTTP/1.1\r\nHost: l\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(got.find("POST /c 5"), std::string::npos) << got;
}

TEST_F(HttpServerTest, RefusesOversizedBodiesBeforeReadingThem) {
  ServerOptions o;
  o.max_body_bytes = 100;
  Start(std::move(o));
  std::string got = Exchange("POST /x HTTP/1.1\r\nHost: l\r\nContent-Length: 1000000000\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 413"), std::string::npos) << got;
  EXPECT_NE(got.find("\"code\":\"request_too_large\""), std::string::npos) << got;
}

TEST_F(HttpServerTest, RefusesOversizedHeaders) {
  ServerOptions o;
  o.max_header_bytes = 1024;
  Start(std::move(o));
  std::string got = Exchange("GET / HTTP/1.1\r\nHost: l\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 431"), std::string::npos) << got;
}

TEST_F(HttpServerTest, AnswersGarbageWith400) {
  Start({});
  for (std::string bad : {std::string("NOT HTTP AT ALL\r\n\r\n"), std::string("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
                          std::string("\x00\x01\x02\r\n\r\n", 7),
                          std::string("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n")}) {
    std::string got = Exchange(bad);
    EXPECT_NE(got.find("HTTP/1.1 400"), std::string::npos) << bad << " -> " << got;
  }
}

TEST_F(HttpServerTest, DropsASlowlorisAtTheRequestDeadline) {
  ServerOptions o;
  o.request_timeout_ms = 300;
  Start(std::move(o));
  int fd = Connect();
  (void)!::send(fd, "GET / HTTP/1.1\r\nHo", 18, MSG_NOSIGNAL);
  std::string got = ReadUntilClose(fd, llmd::testing::kLivenessMillis);  // liveness only: the 408 proves the deadline
  ::close(fd);
  EXPECT_NE(got.find("HTTP/1.1 408"), std::string::npos) << got;
}

TEST_F(HttpServerTest, RefusesConnectionsOverTheCapWith503) {
  // The first connection's request stays in its handler until the test releases it, so the
  // test knows when that connection holds the only slot, and that it still does.
  std::mutex mu;
  std::condition_variable cv;
  bool serving = false, released = false;
  ServerOptions o;
  o.max_connections = 1;
  o.handler = [&](const Request&, Responder& out) {
    std::unique_lock<std::mutex> lock(mu);
    serving = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
    out.Send(200, "text/plain", "done");
  };
  Start(std::move(o));
  int held = Connect();
  const std::string request = "GET / HTTP/1.1\r\nHost: l\r\n\r\n";
  (void)!::send(held, request.data(), request.size(), MSG_NOSIGNAL);
  bool slot_taken;
  {
    std::unique_lock<std::mutex> lock(mu);
    slot_taken = cv.wait_for(lock, llmd::testing::kLiveness, [&] { return serving; });  // liveness only
  }
  // No ASSERT before the release below: a handler left waiting would hang the server's Stop.
  EXPECT_TRUE(slot_taken) << "the first connection's request never reached the handler";
  std::string got = Exchange(request);
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  ::close(held);
  server_.reset();  // joins the handler before the state it uses goes out of scope
}

TEST_F(HttpServerTest, StreamsChunkedResponses) {
  ServerOptions o;
  o.handler = [](const Request&, Responder& out) {
    out.BeginStream(200, "text/event-stream");
    out.WriteChunk("data: 1\n\n");
    out.WriteChunk("data: 2\n\n");
    out.EndStream();
  };
  Start(std::move(o));
  std::string got = Exchange("GET / HTTP/1.1\r\nHost: l\r\nConnection: close\r\n\r\n");
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got;
  EXPECT_NE(got.find("9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"), std::string::npos) << got;
}

TEST(ListenLoopbackTcp, RefusesNonLoopbackAddresses) {
  int port = 0;
  for (const char* bad : {"0.0.0.0:0", "192.168.1.1:80", "[::]:0", "example.com:80", "127.0.0.1", "127.0.0.1:99999"}) {
    auto r = ListenLoopbackTcp(bad, &port);
    EXPECT_FALSE(r.has_value()) << bad;
  }
  auto ok = ListenLoopbackTcp("127.0.0.1:0", &port);
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_GT(port, 0);
  ::close(*ok);
}

TEST(ApiKey, ComparesWholeKeys) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer ab", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abcd", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abd", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace llmd::http
