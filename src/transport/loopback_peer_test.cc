// LoopbackPeer: the kernel's socket-table format parsed from fake tables (IPv4, IPv6, IPv4
// mapped into tcp6), the tables read under an injected proc root, and real loopback
// connections: our own UID, and a second real UID (a child that drops to 65534) when root.
#include "transport/loopback_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/support/wait_for.h"

namespace llmd::transport {
namespace {

constexpr const char* kHeader4 =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
constexpr const char* kHeader6 =
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
    "tm->when retrnsmt   uid  timeout inode\n";

TcpEndpoint V4(const char* address, uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET, address, &a.sin_addr), 1);
  return *EndpointOf(s);
}

TcpEndpoint V6(const char* address, uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in6&>(s);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  EXPECT_EQ(::inet_pton(AF_INET6, address, &a.sin6_addr), 1);
  return *EndpointOf(s);
}

// The fake tables below are written as an x86 (little-endian) kernel prints them.
class SocketTableFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (std::endian::native != std::endian::little) GTEST_SKIP() << "tables written for little-endian hosts";
  }
};

TEST_F(SocketTableFormat, FindsTheIpv4PeerSkippingTimeWaitAndOurOwnSide) {
  // The daemon listens on 127.0.0.1:8080 (1F90); the peer is 127.0.0.1:40000 (9C40).
  const std::string table = std::string(kHeader4) +
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n"
      "   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 112 1 0 20 4 30 10 -1\n"
      "   2: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0\n"
      "   3: 0200007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  7777        0 113 1 0 20 4 30 10 -1\n"
      "   4: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  4242        0 114 1 0 20 4 30 10 -1\n";
  auto uid = FindSocketOwner(table, V4("127.0.0.1", 40000), V4("127.0.0.1", 8080));
  ASSERT_TRUE(uid.has_value()) << uid.error().ToString();
  EXPECT_EQ(*uid, 4242u) << "not the listener's, our own side's, the TIME_WAIT's (0) or 127.0.0.2's";
  EXPECT_EQ(FindSocketOwner(table, V4("127.0.0.1", 40001), V4("127.0.0.1", 8080)).error().code(),
            StatusCode::kNotFound);
}

TEST_F(SocketTableFormat, ATimeWaitEntryAloneIsNotFoundNotRoot) {
  const std::string table = std::string(kHeader4) +
      "   0: 0100007F:9C40 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0\n";
  EXPECT_EQ(FindSocketOwner(table, V4("127.0.0.1", 40000), V4("127.0.0.1", 8080)).error().code(),
            StatusCode::kNotFound);
}

TEST_F(SocketTableFormat, ReadsIpv6WordsInHostOrder) {
  // ::1 is three zero words and one holding the bytes 00 00 00 01; 2001:db8::1 starts with
  // the word of bytes 20 01 0d b8. Each word is printed as the host reads it.
  const std::string table = std::string(kHeader6) +
      "   0: 00000000000000000000000001000000:A000 00000000000000000000000001000000:1F90 01 00000000:00000000 "
      "00:00000000 00000000  1001        0 200 1 0 20 4 30 10 -1\n"
      "   1: B80D0120000000000000000001000000:A000 B80D0120000000000000000002000000:1F90 01 00000000:00000000 "
      "00:00000000 00000000  1002        0 201 1 0 20 4 30 10 -1\n";
  auto loopback = FindSocketOwner(table, V6("::1", 0xA000), V6("::1", 8080));
  ASSERT_TRUE(loopback.has_value()) << loopback.error().ToString();
  EXPECT_EQ(*loopback, 1001u);
  auto global = FindSocketOwner(table, V6("2001:db8::1", 0xA000), V6("2001:db8::2", 8080));
  ASSERT_TRUE(global.has_value()) << global.error().ToString();
  EXPECT_EQ(*global, 1002u);
  EXPECT_FALSE(FindSocketOwner(table, V6("::1", 0xA000), V6("2001:db8::2", 8080)).has_value());
}

TEST_F(SocketTableFormat, AnIpv4PeerMatchesItsMappedFormInTcp6) {
  // A dual-stack IPv6 socket that connected to 127.0.0.1 is listed in tcp6 as ::ffff:127.0.0.1.
  const std::string table = std::string(kHeader6) +
      "   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 "
      "00:00000000 00000000  3003        0 300 1 0 20 4 30 10 -1\n";
  auto uid = FindSocketOwner(table, V4("127.0.0.1", 40000), V4("127.0.0.1", 8080));
  ASSERT_TRUE(uid.has_value()) << uid.error().ToString();
  EXPECT_EQ(*uid, 3003u);
  // The same, met from an IPv4-mapped address on our side (a dual-stack listener).
  EXPECT_EQ(*FindSocketOwner(table, V6("::ffff:127.0.0.1", 40000), V6("::ffff:127.0.0.1", 8080)), 3003u);
}

TEST(SocketTable, MalformedLinesAreErrorsNotGuesses) {
  const TcpEndpoint peer = V4("127.0.0.1", 40000), us = V4("127.0.0.1", 8080);
  for (const char* line : {"   0: 0100007F 0100007F:1F90 01 0 0 0 1000 0\n",
                           "   0: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  x1000 0\n",
                           "   0: 100007F:9C40:1 0100007F:1F90 01 0 0 0 1000 0\n",
                           "   0: 0100007F:9C40 0100007F:1F90 01\n"}) {
    EXPECT_EQ(FindSocketOwner(std::string(kHeader4) + line, peer, us).error().code(), StatusCode::kInvalidArgument)
        << line;
  }
  EXPECT_EQ(FindSocketOwner(kHeader4, peer, us).error().code(), StatusCode::kNotFound) << "header only";
  EXPECT_EQ(FindSocketOwner("", peer, us).error().code(), StatusCode::kNotFound);
}

// A listening loopback socket of `family` (port chosen by the kernel), or -1 where the host has
// no such loopback (no IPv6).
int ListenLoopback(int family, uint16_t* port) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_storage s{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in6&>(s);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    len = sizeof a;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&s), len) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return -1;
  }
  len = sizeof s;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len);
  *port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in&>(s).sin_port
                                  : reinterpret_cast<sockaddr_in6&>(s).sin6_port);
  return fd;
}

int ConnectLoopback(int family, uint16_t port) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage s{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto& a = reinterpret_cast<sockaddr_in&>(s);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    len = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in6&>(s);
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(port);
    len = sizeof a;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&s), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The next connection on `listener`, waited for up to the liveness bound; -1 if none comes.
int AcceptOne(int listener) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, llmd::testing::kLivenessMillis) != 1) return -1;
  return ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
}

class LoopbackPeerTest : public ::testing::TestWithParam<int> {};

TEST_P(LoopbackPeerTest, AConnectionOfOursIsOurUid) {
  uint16_t port = 0;
  const int listener = ListenLoopback(GetParam(), &port);
  if (listener < 0) GTEST_SKIP() << "no loopback for this address family";
  const int client = ConnectLoopback(GetParam(), port);
  ASSERT_GE(client, 0);
  const int accepted = AcceptOne(listener);
  ASSERT_GE(accepted, 0);
  auto uid = LoopbackPeerUid(accepted);
  ASSERT_TRUE(uid.has_value()) << uid.error().ToString();
  EXPECT_EQ(*uid, ::getuid());
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

// Two real UIDs: a child that drops to 65534 connects; the accepted connection must report
// 65534, and the primary group of 65534's user entry when it has one.
TEST_P(LoopbackPeerTest, AnotherUsersConnectionIsTheirUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user";
  uint16_t port = 0;
  const int listener = ListenLoopback(GetParam(), &port);
  if (listener < 0) GTEST_SKIP() << "no loopback for this address family";
  int release[2];
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(release[1]);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(2);
    const int fd = ConnectLoopback(GetParam(), port);
    char byte;
    (void)!::read(release[0], &byte, 1);  // keep the connection open until the parent has looked
    ::_exit(fd >= 0 ? 0 : 3);
  }
  ::close(release[0]);
  const int accepted = AcceptOne(listener);
  std::optional<Result<PeerCred>> cred;
  if (accepted >= 0) cred = LoopbackPeerCred(accepted);
  ::close(release[1]);  // before any ASSERT: the child must not be left waiting
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not connect as 65534";
  ASSERT_GE(accepted, 0);
  ASSERT_TRUE(cred->has_value()) << cred->error().ToString();
  EXPECT_EQ((*cred)->uid, 65534u);
  const passwd* nobody = ::getpwuid(65534);
  EXPECT_EQ((*cred)->gid, nobody != nullptr ? nobody->pw_gid : kNoGid);
  ::close(accepted);
  ::close(listener);
}

// An IPv6 socket that connects to 127.0.0.1 (dual stack, as many clients open them) is listed
// in tcp6 under ::ffff:127.0.0.1, while the daemon's IPv4 socket sees a plain IPv4 peer.
TEST(LoopbackPeer, ADualStackClientOnIpv4IsFoundInTcp6) {
  uint16_t port = 0;
  const int listener = ListenLoopback(AF_INET, &port);
  ASSERT_GE(listener, 0);
  const int client = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) GTEST_SKIP() << "no IPv6 sockets";
  int off = 0;
  ::setsockopt(client, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  sockaddr_in6 to{};
  to.sin6_family = AF_INET6;
  to.sin6_port = htons(port);
  ASSERT_EQ(::inet_pton(AF_INET6, "::ffff:127.0.0.1", &to.sin6_addr), 1);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << std::strerror(errno);
  const int accepted = AcceptOne(listener);
  ASSERT_GE(accepted, 0);
  auto uid = LoopbackPeerUid(accepted);
  ASSERT_TRUE(uid.has_value()) << uid.error().ToString();
  EXPECT_EQ(*uid, ::getuid());
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

INSTANTIATE_TEST_SUITE_P(Families, LoopbackPeerTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const auto& info) { return info.param == AF_INET ? "Ipv4" : "Ipv6"; });

// An address as the kernel prints it in tcp6 (each 32-bit word as this host reads it), with
// its port.
std::string ProcAddress6(const TcpEndpoint& e) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    uint32_t word;
    std::memcpy(&word, &e.address.s6_addr[i * 4], 4);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08X", word);
    out += hex;
  }
  char port[6];
  std::snprintf(port, sizeof port, "%04X", e.port);
  return out + ":" + port;
}

// The tables are read under the proc root given: here a fake one whose tcp lacks the peer and
// whose tcp6 lists it (as a dual-stack socket would be), so both files are read.
TEST(LoopbackPeer, ReadsBothTablesUnderTheProcRootGiven) {
  uint16_t port = 0;
  const int listener = ListenLoopback(AF_INET, &port);
  ASSERT_GE(listener, 0);
  const int client = ConnectLoopback(AF_INET, port);
  ASSERT_GE(client, 0);
  const int accepted = AcceptOne(listener);
  ASSERT_GE(accepted, 0);
  sockaddr_storage peer_addr{}, our_addr{};
  socklen_t len = sizeof peer_addr;
  ::getpeername(accepted, reinterpret_cast<sockaddr*>(&peer_addr), &len);
  len = sizeof our_addr;
  ::getsockname(accepted, reinterpret_cast<sockaddr*>(&our_addr), &len);
  const TcpEndpoint peer = *EndpointOf(peer_addr), us = *EndpointOf(our_addr);

  char tmpl[] = "/tmp/llmd-proc-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  ::mkdir((root + "/net").c_str(), 0755);
  std::ofstream(root + "/net/tcp") << kHeader4;
  EXPECT_EQ(LoopbackPeerUid(accepted, root).error().code(), StatusCode::kNotFound) << "tcp6 missing, tcp empty";
  std::ofstream(root + "/net/tcp6") << kHeader6 << "   0: " << ProcAddress6(peer) << " " << ProcAddress6(us)
                                    << " 01 00000000:00000000 00:00000000 00000000  5151        0 1 1 0\n";
  auto uid = LoopbackPeerUid(accepted, root);
  ASSERT_TRUE(uid.has_value()) << uid.error().ToString();
  EXPECT_EQ(*uid, 5151u);
  std::remove((root + "/net/tcp").c_str());
  std::remove((root + "/net/tcp6").c_str());
  ::rmdir((root + "/net").c_str());
  ::rmdir(root.c_str());
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

}  // namespace
}  // namespace llmd::transport
