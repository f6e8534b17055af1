// Sha256: an incremental SHA-256 over OpenSSL's libcrypto (EVP), and helpers for the lowercase
// hex digests that the hub's `lfs.oid` and callers use. Hand-written hashing has no place in
// code that decides whether a downloaded model is the one asked for.
//
// Thread-safety: a Sha256 is used by one thread at a time; distinct objects are independent.
#ifndef LLMD_FETCH_SHA256_H_
#define LLMD_FETCH_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::fetch {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // Starts over, as if just made.
  void Reset();
  // The digest of everything given since the last Reset, as 64 lowercase hex digits. The
  // state is not consumed: more Updates may follow (the digest of the longer input).
  std::string HexDigest() const;

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// The SHA-256 of `bytes`, in lowercase hex.
std::string Sha256Hex(std::string_view bytes);

// Feeds the first `bytes` bytes of the open file `fd` to `hash` (pread, so the file offset is
// left alone). An error names `what` (the file's path) and the OS error; a file shorter than
// `bytes` is an error.
Status HashFilePrefix(int fd, uint64_t bytes, std::string_view what, Sha256& hash);

// `text` as a lowercase SHA-256 hex digest, or InvalidArgument unless it is 64 hex digits (any
// case; a "sha256:" prefix, as Ollama writes digests, is accepted and dropped).
Result<std::string> NormalizeSha256(std::string_view text);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_SHA256_H_
