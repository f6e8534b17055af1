#include "tools/llmctl/terminal_text.h"

#include <gtest/gtest.h>

namespace llmd::llmctl {
namespace {

TEST(TerminalSafe, EscapesWhatATerminalWouldObey) {
  EXPECT_EQ(TerminalSafe("plain text, tabs\tand\nnewlines"), "plain text, tabs\tand\nnewlines");
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b[H wiped"), "\\x1b[2J\\x1b[H wiped");               // clear screen
  EXPECT_EQ(TerminalSafe("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");                      // window title
  EXPECT_EQ(TerminalSafe("over\rwrite\b\x7f"), "over\\x0dwrite\\x08\\x7f");               // CR, BS, DEL
  EXPECT_EQ(TerminalSafe("\xc2\x9b" "31m"), "\\u{9b}31m");                                // C1 CSI
  EXPECT_EQ(TerminalSafe("caf\xc3\xa9 \xe6\xb2\xb3 \xf0\x9f\x98\x80 \xc2\xa0"), "caf\xc3\xa9 \xe6\xb2\xb3 \xf0\x9f\x98\x80 \xc2\xa0");
  EXPECT_EQ(TerminalSafe(std::string("a\0b", 3)), "a\\x00b");
}

}  // namespace
}  // namespace llmd::llmctl
