#include "common/utf8.h"

#include <gtest/gtest.h>

namespace llmd {
namespace {

TEST(Utf8, AcceptsValidText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8(std::string_view("a\0b", 3)));  // NUL is valid UTF-8
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(Utf8, RejectsEveryInvalidClass) {
  EXPECT_EQ(FindInvalidUtf8("ab\x80"), 2u);              // lone continuation byte
  EXPECT_EQ(FindInvalidUtf8("\xC0\xAF"), 0u);            // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xE0\x80\xAF"), 0u);        // overlong 3-byte
  EXPECT_EQ(FindInvalidUtf8("\xF0\x80\x80\xAF"), 0u);    // overlong 4-byte
  EXPECT_EQ(FindInvalidUtf8("x\xED\xA0\x80"), 1u);       // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);    // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("ok\xE2\x82"), 2u);          // cut off at the end
  EXPECT_EQ(FindInvalidUtf8("\xFF"), 0u);
}

TEST(Utf8StreamAssembler, HoldsSplitCharactersUntilComplete) {
  Utf8StreamAssembler a;
  EXPECT_EQ(a.Push("a\xE2"), "a");
  EXPECT_EQ(a.pending_bytes(), 1u);
  EXPECT_EQ(a.Push("\x82"), "");
  EXPECT_EQ(a.Push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(a.Finish(), "");
}

TEST(Utf8StreamAssembler, ReplacesInvalidBytesAndIncompleteTail) {
  Utf8StreamAssembler a;
  EXPECT_EQ(a.Push("x\xFFy"), "x\xEF\xBF\xBDy");
  EXPECT_EQ(a.Push("\xF0\x9F"), "");
  EXPECT_EQ(a.Finish(), "\xEF\xBF\xBD");
  EXPECT_EQ(a.pending_bytes(), 0u);
}

TEST(Utf8StreamAssembler, EverySplitOfValidTextReassembles) {
  const std::string text = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80 end";
  for (size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= text.size(); ++cut2) {
      Utf8StreamAssembler a;
      std::string out;
      for (auto part : {text.substr(0, cut1), text.substr(cut1, cut2 - cut1), text.substr(cut2)}) {
        std::string piece = a.Push(part);
        EXPECT_TRUE(IsValidUtf8(piece));
        out += piece;
      }
      out += a.Finish();
      ASSERT_EQ(out, text) << "cuts " << cut1 << "," << cut2;
    }
  }
}

}  // namespace
}  // namespace llmd
