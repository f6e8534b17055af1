// Sha256 over OpenSSL's EVP interface (the one OpenSSL 3 keeps).
// Thread-safety: one thread per Sha256 (sha256.h).
#include "fetch/sha256.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace llmd::fetch {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

namespace {

// EVP fails only on allocation failure or a broken libcrypto; neither can be answered.
void CheckEvp(int ok, const char* what) {
  if (ok == 1) return;
  std::fprintf(stderr, "llmd: fatal: libcrypto %s failed\n", what);
  std::abort();
}

}  // namespace

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  CheckEvp(ctx_->md != nullptr ? 1 : 0, "EVP_MD_CTX_new");
  Reset();
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::Reset() { CheckEvp(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr), "DigestInit"); }

void Sha256::Update(std::string_view bytes) {
  if (bytes.empty()) return;
  CheckEvp(EVP_DigestUpdate(ctx_->md, bytes.data(), bytes.size()), "DigestUpdate");
}

std::string Sha256::HexDigest() const {
  // Finalize a copy, so the running state can take more bytes.
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  CheckEvp(copy != nullptr ? 1 : 0, "EVP_MD_CTX_new");
  CheckEvp(EVP_MD_CTX_copy_ex(copy, ctx_->md), "MD_CTX_copy");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CheckEvp(EVP_DigestFinal_ex(copy, digest, &len), "DigestFinal");
  EVP_MD_CTX_free(copy);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xF]);
  }
  return hex;
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

Status HashFilePrefix(int fd, uint64_t bytes, std::string_view what, Sha256& hash) {
  std::vector<char> buf(1 << 20);
  uint64_t done = 0;
  while (done < bytes) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - done));
    ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return InternalError("reading " + std::string(what) + ": " + std::strerror(errno));
    }
    if (got == 0) return InternalError(std::string(what) + " shrank while being hashed");
    hash.Update(std::string_view(buf.data(), static_cast<size_t>(got)));
    done += static_cast<uint64_t>(got);
  }
  return Status::Ok();
}

Result<std::string> NormalizeSha256(std::string_view text) {
  if (text.starts_with("sha256:")) text.remove_prefix(7);
  if (text.size() != 64) {
    return InvalidArgumentError("a sha256 digest is 64 hex digits, got " +
                                std::to_string(text.size()) + " characters");
  }
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return InvalidArgumentError("a sha256 digest is 64 hex digits: '" + std::string(text) + "'");
    }
  }
  return out;
}

}  // namespace llmd::fetch
