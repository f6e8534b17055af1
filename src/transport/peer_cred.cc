#include "transport/peer_cred.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace llmd::transport {

Result<PeerCred> GetPeerCred(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return InternalError(std::string("SO_PEERCRED failed: ") + std::strerror(errno));
  }
  return PeerCred{cred.pid, cred.uid, cred.gid};
}

AccessPolicy::AccessPolicy(std::vector<uint32_t> uids, std::vector<uint32_t> gids)
    : uids_(std::move(uids)), gids_(std::move(gids)) {
  if (uids_.empty()) uids_ = {static_cast<uint32_t>(::getuid()), 0};
}

bool AccessPolicy::Allows(const PeerCred& peer) const {
  return std::find(uids_.begin(), uids_.end(), peer.uid) != uids_.end() ||
         std::find(gids_.begin(), gids_.end(), peer.gid) != gids_.end();
}

}  // namespace llmd::transport
