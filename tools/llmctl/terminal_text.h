// Model text made safe for a terminal (robustness item 39): a model can generate escape
// sequences that move the cursor, rewrite earlier lines, retitle the window or, on some
// terminals, do worse. llmctl shows them as visible escapes when it writes to a terminal.
#ifndef LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_
#define LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace llmd::llmctl {

// `text` with C0 controls (except tab and newline), DEL and C1 controls (U+0080..U+009F)
// replaced by "\xNN" / "\u{NN}". Works on stream pieces: each control is one character, and
// llmd never splits a UTF-8 character between pieces.
std::string TerminalSafe(std::string_view text);

// --- `llmctl pull`'s progress.

// Bytes for people, in binary units: "512 B", "1.5 KiB", "26.9 MiB", "4.2 GiB".
std::string HumanBytes(uint64_t bytes);
// A time left for people: "7s", "1m05s", "2h03m"; "?" when it cannot be known (no rate).
std::string HumanEta(double seconds);
// One terminal line (redrawn in place with '\r'): the status, a bar `width` cells wide, the
// percentage, bytes done of total, the rate and the time left. Without a total (0): the
// status, the bytes and the rate only.
// "pulling x.gguf [#########-----------]  45%  1.2 GiB/2.6 GiB  12.3 MiB/s  ETA 1m52s"
std::string ProgressBar(std::string_view status, uint64_t done, uint64_t total, double bytes_per_second,
                        int width = 30);
// A plain line for a pipe or a log: "pulling x.gguf: 1234 of 5678 bytes (21%)" (no total:
// "pulling x.gguf: 1234 bytes").
std::string ProgressLine(std::string_view status, uint64_t done, uint64_t total);

}  // namespace llmd::llmctl

#endif  // LLMD_TOOLS_LLMCTL_TERMINAL_TEXT_H_
