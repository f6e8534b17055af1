#include "http/responses/response_owner.h"

#include <openssl/evp.h>

#include <cstdio>

namespace llmd::http {
namespace {

// The key's identity: the first 128 bits of SHA-256 over a label and the key, in hex.
std::string KeyIdentity(const std::string& key) {
  const std::string input = "llmd stored response owner\n" + key;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &length, EVP_sha256(), nullptr) != 1 || length < 16) {
    return "";  // no identity: the caller stores nothing
  }
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < 16; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

}  // namespace

std::string ResponseOwner(const Peer& peer, bool key_used, const std::string& api_key) {
  std::string owner;
  if (peer.identified) owner = "uid:" + std::to_string(peer.uid);
  if (key_used && !api_key.empty()) {
    const std::string key = KeyIdentity(api_key);
    if (key.empty()) return "";
    owner += (owner.empty() ? "key:" : " key:") + key;
  }
  return owner;
}

}  // namespace llmd::http
