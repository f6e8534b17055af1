// Who is on the other end of a loopback TCP connection, from the kernel's socket table, as
// identd does. TCP has no SO_PEERCRED, but on one host both ends of a connection are sockets of
// this network namespace: the peer's own socket is the entry of /proc/net/tcp (or tcp6) whose
// local address is the peer's and whose remote address is ours, and its `uid` column is the
// UID of the process that created it. The kernel writes the table, so a local process cannot
// forge its entry; a peer in another network namespace (or one that closed before we looked)
// has no entry here and is not found, never mistaken for someone else.
//
// Thread-safety: the functions are pure or read /proc only; call them from any thread.
#ifndef LLMD_TRANSPORT_LOOPBACK_PEER_H_
#define LLMD_TRANSPORT_LOOPBACK_PEER_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmd/result.h"
#include "transport/peer_cred.h"

namespace llmd::transport {

// One end of a TCP connection. IPv4 addresses are kept in their IPv4-mapped IPv6 form
// (::ffff:a.b.c.d), so an IPv4 peer matches whether its socket is listed in tcp or, opened as
// a dual-stack IPv6 socket, in tcp6.
struct TcpEndpoint {
  in6_addr address{};
  uint16_t port = 0;  // host order
};

// The endpoint of an AF_INET or AF_INET6 address; nullopt for any other family.
std::optional<TcpEndpoint> EndpointOf(const sockaddr_storage& addr);

// The UID of the live socket in `table` (the text of /proc/net/tcp or /proc/net/tcp6, header
// line included) whose local end is `peer` and remote end is `us`. Entries in TIME_WAIT or
// NEW_SYN_RECV are skipped: they belong to no process (the kernel lists them with UID 0, or the
// listener's). NotFound when no live entry matches; InvalidArgument for a malformed line.
Result<uint32_t> FindSocketOwner(std::string_view table, const TcpEndpoint& peer, const TcpEndpoint& us);

// The UID owning the other end of the accepted TCP socket `fd`, from `proc_root`/net/tcp and
// /net/tcp6 (the daemon's own network namespace). NotFound when the peer is not in them.
Result<uint32_t> LoopbackPeerUid(int fd, const std::string& proc_root = "/proc");

// The peer's credentials as far as they are known: its UID, that UID's primary group from the
// user database (kNoGid when it has no entry), pid 0 (unknown).
Result<PeerCred> LoopbackPeerCred(int fd, const std::string& proc_root = "/proc");

}  // namespace llmd::transport

#endif  // LLMD_TRANSPORT_LOOPBACK_PEER_H_
