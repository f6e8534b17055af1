#include "transport/loopback_peer.h"

#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

namespace llmd::transport {
namespace {

// TCP states (include/net/tcp_states.h) whose table entries belong to no process.
constexpr unsigned kTimeWait = 0x06, kListen = 0x0A, kNewSynRecv = 0x0C;

bool ParseHex(std::string_view text, uint32_t* out) {
  if (text.empty() || text.size() > 8) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

// "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6). The kernel prints each 32-bit
// word of the address as the number the host reads from its memory (%08X of s_addr, of each
// s6_addr32[i]), so the word's bytes in host order are the address's bytes in network order;
// the port it prints is a number (ntohs already applied).
bool ParseEndpoint(std::string_view text, TcpEndpoint* out) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string_view hex = text.substr(0, colon);
  uint32_t port = 0;
  if (!ParseHex(text.substr(colon + 1), &port) || port > 0xFFFF) return false;
  out->port = static_cast<uint16_t>(port);
  out->address = in6_addr{};
  if (hex.size() == 8) {
    uint32_t word = 0;
    if (!ParseHex(hex, &word)) return false;
    out->address.s6_addr[10] = out->address.s6_addr[11] = 0xFF;  // ::ffff:a.b.c.d
    std::memcpy(&out->address.s6_addr[12], &word, 4);
    return true;
  }
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 4; ++i) {
    uint32_t word = 0;
    if (!ParseHex(hex.substr(i * 8, 8), &word)) return false;
    std::memcpy(&out->address.s6_addr[i * 4], &word, 4);
  }
  return true;
}

bool SameEndpoint(const TcpEndpoint& a, const TcpEndpoint& b) {
  return a.port == b.port && std::memcmp(&a.address, &b.address, sizeof a.address) == 0;
}

// The whitespace-separated fields of one table line.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t", at);
    if (at == std::string_view::npos) return fields;
    const size_t end = std::min(line.find_first_of(" \t", at), line.size());
    fields.push_back(line.substr(at, end - at));
    at = end;
  }
}

// A table line: "sl local remote st tx:rx tr:when retrnsmt uid timeout inode ...". Returns
// whether it parsed; `*owner` is set when the line is a live socket from `peer` to `us`.
bool MatchLine(std::string_view line, const TcpEndpoint& peer, const TcpEndpoint& us, std::optional<uint32_t>* owner) {
  const std::vector<std::string_view> f = Fields(line);
  TcpEndpoint local, remote;
  uint32_t state = 0;
  if (f.size() < 8 || !ParseEndpoint(f[1], &local) || !ParseEndpoint(f[2], &remote) || !ParseHex(f[3], &state)) {
    return false;
  }
  if (!SameEndpoint(local, peer) || !SameEndpoint(remote, us)) return true;
  if (state == kTimeWait || state == kListen || state == kNewSynRecv) return true;
  uint32_t uid = 0;
  auto [end, ec] = std::from_chars(f[7].data(), f[7].data() + f[7].size(), uid);
  if (ec != std::errc() || end != f[7].data() + f[7].size()) return false;
  *owner = uid;
  return true;
}

// The whole of a /proc file (its size reads as 0, so read to the end).
Result<std::string> ReadProcFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

Result<TcpEndpoint> Endpoint(int fd, bool peer) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) {
    return NotFoundError(std::string(peer ? "getpeername" : "getsockname") + ": " + std::strerror(errno));
  }
  auto e = EndpointOf(addr);
  if (!e.has_value()) return InvalidArgumentError("not a TCP/IP socket");
  return *e;
}

}  // namespace

std::optional<TcpEndpoint> EndpointOf(const sockaddr_storage& addr) {
  TcpEndpoint e;
  if (addr.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(addr);
    e.address = a6.sin6_addr;
    e.port = ntohs(a6.sin6_port);
    return e;
  }
  if (addr.ss_family == AF_INET) {
    const auto& a4 = reinterpret_cast<const sockaddr_in&>(addr);
    e.address.s6_addr[10] = e.address.s6_addr[11] = 0xFF;
    std::memcpy(&e.address.s6_addr[12], &a4.sin_addr.s_addr, 4);
    e.port = ntohs(a4.sin_port);
    return e;
  }
  return std::nullopt;
}

Result<uint32_t> FindSocketOwner(std::string_view table, const TcpEndpoint& peer, const TcpEndpoint& us) {
  bool header = true;
  while (!table.empty()) {
    const size_t eol = std::min(table.find('\n'), table.size());
    const std::string_view line = table.substr(0, eol);
    table.remove_prefix(std::min(eol + 1, table.size()));
    if (std::exchange(header, false) || line.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::optional<uint32_t> owner;
    if (!MatchLine(line, peer, us, &owner)) return InvalidArgumentError("unreadable socket table line: " + std::string(line));
    if (owner.has_value()) return *owner;
  }
  return NotFoundError("no socket in the table has the peer's address");
}

Result<uint32_t> LoopbackPeerUid(int fd, const std::string& proc_root) {
  LLMD_ASSIGN_OR_RETURN(const TcpEndpoint us, Endpoint(fd, false));
  LLMD_ASSIGN_OR_RETURN(const TcpEndpoint peer, Endpoint(fd, true));
  // An IPv6 peer is listed in tcp6 only; an IPv4 one in tcp, or in tcp6 when its socket is a
  // dual-stack IPv6 one.
  const bool v4 = IN6_IS_ADDR_V4MAPPED(&peer.address);
  Status last = NotFoundError("the peer is not in this network namespace's socket table");
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    if (!v4 && std::string_view(table) == "/net/tcp") continue;
    auto text = ReadProcFile(proc_root + table);
    if (!text.has_value()) continue;  // no IPv6 in this kernel: no tcp6
    auto uid = FindSocketOwner(*text, peer, us);
    if (uid.has_value()) return *uid;
    last = uid.error();
    if (last.code() != StatusCode::kNotFound) return last;
  }
  return last;
}

Result<PeerCred> LoopbackPeerCred(int fd, const std::string& proc_root) {
  LLMD_ASSIGN_OR_RETURN(const uint32_t uid, LoopbackPeerUid(fd, proc_root));
  PeerCred cred{0, static_cast<uid_t>(uid), kNoGid};
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    cred.gid = found->pw_gid;
  }
  return cred;
}

}  // namespace llmd::transport
