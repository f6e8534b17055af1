// Session files: a chat session saved to disk as its system prompt and exact token history
// (never llama.cpp's KV state, whose loader has had memory-safety bugs: the cache is rebuilt
// by prefilling the tokens on the next turn).
//
//   "LLMDSES1" | version u32 (3)  | total length u64 | model fingerprint u64 |
//   system: u32 length + bytes | tokens: u32 count + i32 each |
//   turn starts: u32 count + u32 each (version 3) |
//   crc32 u32 of everything before it                                    (little-endian)
//
// The turn starts (where each turn's user message begins in the tokens, ascending) let
// overflow drop_oldest cut whole turns. A version 2 file has none: it loads, and its whole
// history is kept like the system prompt (never dropped); turns after it can be.
//
// A file is trusted only after every length is checked against the file, the checksum
// matches, the fingerprint names the loaded model and every token is in its vocabulary.
// Writes are atomic: a temporary file, fsync, rename, fsync of the directory.
#ifndef LLMD_FORMAT_SESSION_FILE_H_
#define LLMD_FORMAT_SESSION_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::format {

inline constexpr uint64_t kMaxSessionFileBytes = 16 << 20;

struct SessionData {
  std::string system;
  std::vector<int32_t> tokens;
  std::vector<uint32_t> turn_starts;  // ascending, each inside `tokens`
};

std::string EncodeSession(const SessionData& session, uint64_t model_fingerprint);
// Corruption for any malformed, truncated, foreign (other model) or out-of-vocabulary file.
Result<SessionData> DecodeSession(std::string_view bytes, uint64_t model_fingerprint, int32_t vocab_size);

// Session ids become file names: 1..64 of [A-Za-z0-9._-], not starting with '.'.
bool IsValidSessionId(std::string_view id);

// Atomically replaces `path` with `bytes`. On error (disk full, read-only directory) the old
// file is untouched and the message says why.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);
// Reads a whole regular file of at most `max_bytes`.
Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_SESSION_FILE_H_
