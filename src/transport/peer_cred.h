// Who is on the other end of a Unix socket (SO_PEERCRED), and whether they may talk to us.
// SO_PEERCRED reports the credentials the peer had when it called connect(): a descriptor
// passed to another process, or a setuid() after connecting, does not change them.
#ifndef LLMD_TRANSPORT_PEER_CRED_H_
#define LLMD_TRANSPORT_PEER_CRED_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "llmd/result.h"

namespace llmd::transport {

// No group is known (a TCP peer whose UID has no user entry). (gid_t)-1 is no group's id, and
// allowed_gids cannot name it, so it matches no allowlist.
inline constexpr gid_t kNoGid = static_cast<gid_t>(-1);

struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

Result<PeerCred> GetPeerCred(int fd);

// A UID/GID allowlist. Thread-safe after construction (read-only).
class AccessPolicy {
 public:
  // Empty `uids` means the daemon's own uid and root.
  AccessPolicy(std::vector<uint32_t> uids, std::vector<uint32_t> gids);
  bool Allows(const PeerCred& peer) const;
  // Only root may stop or reload the daemon.
  static bool MayAdminister(const PeerCred& peer) { return peer.uid == 0; }

 private:
  std::vector<uint32_t> uids_;
  std::vector<uint32_t> gids_;
};

}  // namespace llmd::transport

#endif  // LLMD_TRANSPORT_PEER_CRED_H_
