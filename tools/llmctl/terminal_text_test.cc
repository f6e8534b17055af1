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

TEST(PullProgress, BytesAndTimesForPeople) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{26913824}), "25.7 MiB");
  EXPECT_EQ(HumanBytes(uint64_t{5} << 30), "5.0 GiB");
  EXPECT_EQ(HumanEta(6.6), "7s");
  EXPECT_EQ(HumanEta(65), "1m05s");
  EXPECT_EQ(HumanEta(7380), "2h03m");
  EXPECT_EQ(HumanEta(-1), "?");
}

TEST(PullProgress, ATerminalGetsABarAPipeGetsPlainLines) {
  // 45% of 2 GiB at 10 MiB/s: 1.1 GiB to go, 113 s.
  const uint64_t total = uint64_t{2} << 30;
  const uint64_t done = total * 45 / 100 + 1;
  EXPECT_EQ(ProgressBar("pulling x.gguf", done, total, 10.0 * (1 << 20), 20),
            "pulling x.gguf [#########-----------]  45%  921.6 MiB/2.0 GiB  10.0 MiB/s  ETA 1m53s");
  EXPECT_EQ(ProgressBar("pulling x.gguf", total, total, 0, 4), "pulling x.gguf [####] 100%  2.0 GiB/2.0 GiB  -/s  ETA ?");
  EXPECT_EQ(ProgressBar("pulling x.gguf", 2048, 0, 1024), "pulling x.gguf  2.0 KiB  1.0 KiB/s") << "no total yet";
  EXPECT_EQ(ProgressLine("pulling x.gguf", 1234, 5678), "pulling x.gguf: 1234 of 5678 bytes (21%)");
  EXPECT_EQ(ProgressLine("pulling manifest", 0, 0), "pulling manifest: 0 bytes");
}

}  // namespace
}  // namespace llmd::llmctl
