// HttpServer on loopback TCP beside its Unix socket: TCP peers carry what identify_tcp found,
// connections are shared by the ConnectionBudget (a slow-header flood holds only its UID's
// share of the small unidentified pool; another UID and the Unix socket are still served), the
// header deadline, and a refused TCP request closing its connection. Outcomes are counted and
// every wait is a liveness bound.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "tests/support/wait_for.h"

namespace llmd::http {
namespace {

constexpr const char* kPartialHeader = "GET /v1/models HTTP/1.1\r\nHo";
constexpr const char* kRestOfHeader = "st: l\r\nConnection: close\r\n\r\n";
constexpr const char* kWholeRequest = "GET /v1/models HTTP/1.1\r\nHost: l\r\nConnection: close\r\n\r\n";

// Reads until the server closes (or the liveness bound passes); `closed` says which.
std::string ReadUntilClose(int fd, bool* closed = nullptr) {
  std::string got;
  const auto end = std::chrono::steady_clock::now() + llmd::testing::kLiveness;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) {
      if (closed != nullptr) *closed = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

void SendText(int fd, const std::string& text) { (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL); }

class HttpServerBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/llmd-http-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    path_ = dir_ + "/http.sock";
    unix_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(unix_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(unix_fd_, 64), 0);
    auto tcp = ListenLoopbackTcp("127.0.0.1:0", &tcp_port_);
    ASSERT_TRUE(tcp.has_value()) << tcp.error().ToString();
    tcp_fd_ = *tcp;
  }
  void TearDown() override {
    server_.reset();
    ::close(unix_fd_);
    ::close(tcp_fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  // Serves both sockets. Unix peers are uid 1000; a TCP peer is the uid the test named when it
  // opened the connection (ConnectTcp), unidentified when it named none. The default handler
  // answers "uid=U gid=G identified=I allowed=A".
  void Start(ServerOptions o) {
    o.unix_fd = unix_fd_;
    o.tcp_fd = tcp_fd_;
    o.admit = [](int) { return std::optional<Peer>(Peer{false, 1000, 1000, 1}); };
    o.identify_tcp = [this](int fd) { return IdentifyByPort(fd); };
    if (!o.handler) {
      o.handler = [](const Request& req, Responder& out) {
        out.Send(200, "text/plain",
                 "uid=" + std::to_string(req.peer.uid) + " gid=" + std::to_string(req.peer.gid) +
                     " identified=" + std::to_string(req.peer.identified) + " allowed=" + std::to_string(req.peer.allowed));
      };
    }
    auto s = HttpServer::Start(std::move(o));
    ASSERT_TRUE(s.has_value()) << s.error().ToString();
    server_ = std::move(*s);
  }

  Peer IdentifyByPort(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
    Peer peer;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tcp_uids_.find(ntohs(a.sin_port));
    if (it == tcp_uids_.end()) return peer;
    peer.identified = true;
    peer.uid = it->second;
    peer.gid = it->second + 1;
    peer.allowed = true;
    return peer;
  }

  // A TCP connection the server will take as `uid`'s (nullopt: unidentified). Its port is
  // bound, and named, before it connects, so the server never sees it unnamed.
  int ConnectTcp(std::optional<uint32_t> uid) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    if (uid.has_value()) {
      std::lock_guard<std::mutex> lock(mu_);
      tcp_uids_[ntohs(a.sin_port)] = *uid;
    }
    a.sin_port = htons(static_cast<uint16_t>(tcp_port_));
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }

  // One request on a new connection, answered whole.
  std::string TcpExchange(std::optional<uint32_t> uid, const std::string& request = kWholeRequest) {
    const int fd = ConnectTcp(uid);
    SendText(fd, request);
    std::string got = ReadUntilClose(fd);
    ::close(fd);
    return got;
  }
  std::string UnixExchange(const std::string& request = kWholeRequest) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    SendText(fd, request);
    std::string got = ReadUntilClose(fd);
    ::close(fd);
    return got;
  }

  std::string dir_, path_;
  int unix_fd_ = -1, tcp_fd_ = -1, tcp_port_ = 0;
  std::mutex mu_;
  std::map<uint16_t, uint32_t> tcp_uids_;  // guarded by mu_
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerBudgetTest, TcpPeersCarryWhatIdentifyFound) {
  Start({});
  EXPECT_NE(TcpExchange(4242).find("uid=4242 gid=4243 identified=1 allowed=1"), std::string::npos);
  EXPECT_NE(TcpExchange(std::nullopt).find("identified=0 allowed=0"), std::string::npos);
  EXPECT_NE(UnixExchange().find("uid=1000 gid=1000 identified=1 allowed=1"), std::string::npos);
}

// 4 unidentified slots (1 kept for newcomers): a UID that opens connections and never
// finishes its headers holds 3 of them; its 4th is refused, while another UID, the Unix socket
// and, once they finish, the 3 held connections are all served.
TEST_F(HttpServerBudgetTest, ASlowHeaderFloodHoldsOnlyItsShareOfTheUnidentifiedPool) {
  ServerOptions o;
  o.max_connections = 16;
  o.max_unidentified_connections = 4;
  o.header_timeout_ms = llmd::testing::kLivenessMillis;  // the flood is held while the test looks
  Start(std::move(o));
  std::vector<int> flood;
  for (int i = 0; i < 3; ++i) {
    flood.push_back(ConnectTcp(7));
    SendText(flood.back(), kPartialHeader);
  }
  const std::string refused = TcpExchange(7, kPartialHeader);  // accepted after the three: FIFO
  EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  EXPECT_NE(TcpExchange(8).find("uid=8 "), std::string::npos) << "another UID takes the slot kept for newcomers";
  EXPECT_NE(UnixExchange().find("uid=1000 "), std::string::npos) << "the Unix socket never draws on TCP's pool";
  for (int fd : flood) {
    SendText(fd, kRestOfHeader);
    EXPECT_NE(ReadUntilClose(fd).find("uid=7 "), std::string::npos) << "each of the three was held, not refused";
    ::close(fd);
  }
}

// A TCP peer with no known UID never leaves the unidentified pool, even once its request is in:
// its idle keep-alive connection still holds that pool's slot.
TEST_F(HttpServerBudgetTest, AnUnidentifiedPeerNeverLeavesTheUnidentifiedPool) {
  ServerOptions o;
  o.max_connections = 16;
  o.max_unidentified_connections = 2;  // the unidentified, as one holder, may hold 1
  Start(std::move(o));
  const int kept = ConnectTcp(std::nullopt);
  SendText(kept, "GET /a HTTP/1.1\r\nHost: l\r\n\r\n");
  char buf[512];
  pollfd p{kept, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, llmd::testing::kLivenessMillis), 1);
  ASSERT_GT(::read(kept, buf, sizeof buf), 0) << "its response came; the connection stays open";
  EXPECT_NE(TcpExchange(std::nullopt).find("HTTP/1.1 503"), std::string::npos);
  EXPECT_NE(TcpExchange(9).find("uid=9 "), std::string::npos) << "a UID is a newcomer there";
  ::close(kept);
  // Its slot comes back once the server sees the close.
  EXPECT_TRUE(llmd::testing::WaitFor([&] { return TcpExchange(std::nullopt).find("HTTP/1.1 200") != std::string::npos; }));
}

// Once its headers are in, a TCP peer needs its UID's share of the identified pool; refused
// there it gets the 503 in the shape of the API its path belongs to.
TEST_F(HttpServerBudgetTest, AShareRefusedOnTheHeadersIsA503InTheApisShape) {
  std::mutex mu;
  std::condition_variable cv;
  bool serving = false, released = false;
  ServerOptions o;
  o.max_connections = 4;
  o.max_unidentified_connections = 2;  // identified pool 2, 1 kept for newcomers: uid 7 may hold 1
  o.error_body = [](std::string_view path, const ApiError& e) { return "shape:" + std::string(path) + ":" + e.code; };
  o.handler = [&](const Request&, Responder& out) {
    std::unique_lock<std::mutex> lock(mu);
    serving = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
    out.Send(200, "text/plain", "done");
  };
  Start(std::move(o));
  const int held = ConnectTcp(7);
  SendText(held, kWholeRequest);
  bool slot_taken;
  {
    std::unique_lock<std::mutex> lock(mu);
    slot_taken = cv.wait_for(lock, llmd::testing::kLiveness, [&] { return serving; });  // liveness only
  }
  // No ASSERT before the release below: a handler left waiting would hang the server's Stop.
  EXPECT_TRUE(slot_taken) << "the first request never reached the handler";
  const std::string got = TcpExchange(7, "POST /api/chat HTTP/1.1\r\nHost: l\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("shape:/api/chat:busy"), std::string::npos) << got;
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  ::close(held);
  server_.reset();  // joins the handler before the state it uses goes out of scope
}

// A new TCP connection must show its headers within the header deadline of accept: one that
// sends nothing is closed without a word, one that sends part of them gets 408.
TEST_F(HttpServerBudgetTest, ANewTcpConnectionShowsItsHeadersInTimeOrGoes) {
  ServerOptions o;
  o.header_timeout_ms = 100;
  Start(std::move(o));
  const int silent = ConnectTcp(7);
  bool closed = false;
  EXPECT_EQ(ReadUntilClose(silent, &closed), "");
  EXPECT_TRUE(closed);
  ::close(silent);
  EXPECT_NE(TcpExchange(7, kPartialHeader).find("HTTP/1.1 408"), std::string::npos);
}

// A TCP request refused 401 or 403 ends its connection: a pipelined second request is not read.
TEST_F(HttpServerBudgetTest, ARefusedTcpRequestClosesItsConnection) {
  ServerOptions o;
  o.handler = [](const Request& req, Responder& out) {
    out.Send(req.path == "/deny" ? 403 : 200, "text/plain", req.path);
  };
  Start(std::move(o));
  const std::string got = TcpExchange(7, "GET /deny HTTP/1.1\r\nHost: l\r\n\r\nGET /next HTTP/1.1\r\nHost: l\r\n\r\n");
  EXPECT_NE(got.find("HTTP/1.1 403"), std::string::npos) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_EQ(got.find("/next"), std::string::npos) << got;
  const std::string unix = UnixExchange("GET /deny HTTP/1.1\r\nHost: l\r\n\r\nGET /next HTTP/1.1\r\nHost: l\r\nConnection: close\r\n\r\n");
  EXPECT_NE(unix.find("/next"), std::string::npos) << "a Unix-socket peer was admitted by its credentials: " << unix;
}

TEST(HttpServerBudget, TcpNeedsRoomBesideTheUnidentifiedPool) {
  int port = 0;
  auto tcp = ListenLoopbackTcp("127.0.0.1:0", &port);
  ASSERT_TRUE(tcp.has_value());
  ServerOptions o;
  o.tcp_fd = *tcp;
  o.max_connections = 4;
  o.max_unidentified_connections = 4;
  o.handler = [](const Request&, Responder&) {};
  EXPECT_FALSE(HttpServer::Start(o).has_value());
  o.max_unidentified_connections = 0;
  EXPECT_FALSE(HttpServer::Start(o).has_value());
  ::close(*tcp);
}

}  // namespace
}  // namespace llmd::http
