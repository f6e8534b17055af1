// Model text made safe for a terminal (robustness item 39): a model can generate escape
// sequences that move the cursor, rewrite earlier lines, retitle the window or, on some
// terminals, do worse. llmctl shows them as visible escapes when it writes to a terminal.
#ifndef LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_
#define LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_

#include <string>
#include <string_view>

namespace llmd::llmctl {

// `text` with C0 controls (except tab and newline), DEL and C1 controls (U+0080..U+009F)
// replaced by "\xNN" / "\u{NN}". Works on stream pieces: each control is one character, and
// llmd never splits a UTF-8 character between pieces.
std::string TerminalSafe(std::string_view text);

}  // namespace llmd::llmctl

#endif  // LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_
