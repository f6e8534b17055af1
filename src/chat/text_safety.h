// Input hygiene for user text, as the reference daemon (seed 000) defines it.
// Pure functions; safe from any thread.
#ifndef LLMD_CHAT_TEXT_SAFETY_H_
#define LLMD_CHAT_TEXT_SAFETY_H_

#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::chat {

// Returns `text` with the seed's sanitizer applied:
//  - C0 controls (U+0000..U+001F) removed, except tab, LF and CR;
//  - DEL (U+007F) removed;
//  - the literal two-character pairs backslash-n, backslash-t and backslash-r removed;
//  - everything else kept: other backslashes (Windows paths), all printable Unicode.
// Invalid UTF-8 is an InvalidArgument error that names the byte offset.
Result<std::string> SanitizeUserInput(std::string_view text);

// Escapes text for a log line: control characters (C0, DEL, C1), line and paragraph
// separators and bidi overrides become \xNN or \u{NNNN}; invalid bytes become \xNN.
// Keeps one log record on one line, whatever a client or model sent (CWE-117).
std::string EscapeForLog(std::string_view text);

}  // namespace llmd::chat

#endif  // LLMD_CHAT_TEXT_SAFETY_H_
