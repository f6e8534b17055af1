// Who owns a stored response (response_store.h): the peer's UID when the kernel named it (the
// Unix socket's SO_PEERCRED, the loopback socket table), and, when the request carried the API
// key, that key's identity: a SHA-256 of it, never the key itself, so that files on disk say
// nothing usable about it and responses made with a key no longer in use stay out of reach of
// the holder of a new one. "uid:1000", "uid:1000 key:3f2a...", "key:3f2a..."; "" when neither
// is known (then nothing is stored or found).
#ifndef LLMD_HTTP_RESPONSES_RESPONSE_OWNER_H_
#define LLMD_HTTP_RESPONSES_RESPONSE_OWNER_H_

#include <string>

#include "http/http_server.h"

namespace llmd::http {

// `key_used`: the request carried the daemon's API key `api_key` (FrontEnd::HasKey).
std::string ResponseOwner(const Peer& peer, bool key_used, const std::string& api_key);

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSE_OWNER_H_
