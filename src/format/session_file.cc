#include "format/session_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace llmd::format {
namespace {

constexpr std::string_view kMagic = "LLMDSES1";
// Version 2: the model fingerprint covers the real vocabulary size (version 1 files hashed it
// as 0, so their fingerprints cannot be compared). Version 3: the turn starts follow the
// tokens; a version 2 file still loads, without them.
constexpr uint32_t kVersion = 3;
constexpr uint32_t kOldestReadable = 2;

uint32_t Crc32(std::string_view data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

void Put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t Get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[at + i]);
  return v;
}

Status Bad(const std::string& why) {
  return CorruptionError("session file " + why).WithReason(ErrorReason::kBadSessionFile);
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }
Status NotSaved(std::string msg) {
  return UnavailableError(std::move(msg)).WithReason(ErrorReason::kSessionNotSaved);
}

}  // namespace

std::string EncodeSession(const SessionData& s, uint64_t fingerprint) {
  std::string out(kMagic);
  Put(out, kVersion, 4);
  Put(out, 0, 8);  // total length, filled in below
  Put(out, fingerprint, 8);
  Put(out, s.system.size(), 4);
  out += s.system;
  Put(out, s.tokens.size(), 4);
  for (int32_t t : s.tokens) Put(out, static_cast<uint32_t>(t), 4);
  Put(out, s.turn_starts.size(), 4);
  for (uint32_t start : s.turn_starts) Put(out, start, 4);
  std::string length;
  Put(length, out.size() + 4, 8);
  out.replace(12, 8, length);
  Put(out, Crc32(out), 4);
  return out;
}

Result<SessionData> DecodeSession(std::string_view in, uint64_t fingerprint, int32_t vocab_size) {
  // magic, version, length, fingerprint, system length, token count, crc
  constexpr size_t kFixed = 8 + 4 + 8 + 8 + 4 + 4 + 4;
  if (in.size() < kFixed) return Bad("is truncated");
  if (in.substr(0, 8) != kMagic) return Bad("has no LLMDSES1 magic");
  const uint64_t version = Get(in, 8, 4);
  if (version < kOldestReadable || version > kVersion) {
    if (version < kOldestReadable) {
      return Bad("was saved by an older llmd (session format " + std::to_string(version) +
                 "); start a new session");
    }
    return Bad("was saved by a newer llmd (session format " + std::to_string(version) + ")");
  }
  if (Get(in, 12, 8) != in.size()) {
    return Bad("says it is " + std::to_string(Get(in, 12, 8)) + " bytes but has " + std::to_string(in.size()));
  }
  if (Crc32(in.substr(0, in.size() - 4)) != Get(in, in.size() - 4, 4)) return Bad("checksum does not match");
  if (Get(in, 20, 8) != fingerprint) return Bad("was saved with another model");
  SessionData s;
  size_t at = 28;
  uint64_t system_len = Get(in, at, 4);
  at += 4;
  if (system_len > in.size() - kFixed) return Bad("system prompt length exceeds the file");
  s.system.assign(in.substr(at, system_len));
  at += system_len;
  uint64_t n = Get(in, at, 4);
  at += 4;
  const bool has_turns = version >= 3;
  const uint64_t rest = in.size() - 4 - at;  // after the count: tokens (and the turn starts), then the crc
  if (has_turns ? (n * 4 + 4 > rest) : (n * 4 != rest)) return Bad("token count does not match the file size");
  s.tokens.reserve(n);
  for (uint64_t i = 0; i < n; ++i, at += 4) {
    auto t = static_cast<int32_t>(Get(in, at, 4));
    if (t < 0 || t >= vocab_size) return Bad("holds token " + std::to_string(t) + ", outside the vocabulary");
    s.tokens.push_back(t);
  }
  if (!has_turns) return s;
  const uint64_t turns = Get(in, at, 4);
  at += 4;
  if (turns * 4 != in.size() - 4 - at) return Bad("turn count does not match the file size");
  for (uint64_t i = 0; i < turns; ++i, at += 4) {
    const auto start = static_cast<uint32_t>(Get(in, at, 4));
    if (start >= n || (!s.turn_starts.empty() && start <= s.turn_starts.back())) {
      return Bad("holds turn start " + std::to_string(start) + ", not ascending inside its " + std::to_string(n) +
                 " tokens");
    }
    s.turn_starts.push_back(start);
  }
  return s;
}

bool IsValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 64 || id[0] == '.') return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return NotSaved(Errno("session not saved: cannot create " + tmp));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string msg = Errno("session not saved: writing " + tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return NotSaved(msg);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string msg = Errno("session not saved: flushing " + tmp);
    ::unlink(tmp.c_str());
    return NotSaved(msg);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = Errno("session not saved: renaming to " + path);
    ::unlink(tmp.c_str());
    return NotSaved(msg);
  }
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // the rename itself survives a crash
    ::close(dfd);
  }
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no saved session at " + path);
    return InvalidArgumentError(Errno(path));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return CorruptionError(path + " is not a regular file of at most " + std::to_string(max_bytes) + " bytes");
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(done);
  return data;
}

}  // namespace llmd::format
