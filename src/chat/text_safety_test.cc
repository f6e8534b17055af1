#include "chat/text_safety.h"

#include <gtest/gtest.h>

namespace llmd::chat {
namespace {

std::string Clean(std::string_view s) {
  auto r = SanitizeUserInput(s);
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  return r.has_value() ? *r : std::string();
}

TEST(SanitizeUserInput, RemovesC0ControlsButKeepsTabLfCr) {
  EXPECT_EQ(Clean(std::string("a\x01" "b\x1b[31mc\x7f" "d", 11)), "ab[31mcd");
  EXPECT_EQ(Clean(std::string("x\0y", 3)), "xy");
  EXPECT_EQ(Clean("tab\there\nline\r\n"), "tab\there\nline\r\n");
}

TEST(SanitizeUserInput, RemovesTypedEscapePairsOnly) {
  EXPECT_EQ(Clean("one\\ntwo\\tthree\\rfour"), "onetwothreefour");
  EXPECT_EQ(Clean("C:\\Users\\bob\\docs"), "C:\\Users\\bob\\docs");
  EXPECT_EQ(Clean("C:\\new"), "C:ew") << "the seed's rule is textual: \\n goes even in a path";
  EXPECT_EQ(Clean("C:\\Program Files\\x"), "C:\\Program Files\\x");
  EXPECT_EQ(Clean("ends with \\"), "ends with \\");
  EXPECT_EQ(Clean("\\\\n"), "\\") << "the second backslash pairs with n";
}

TEST(SanitizeUserInput, KeepsPrintableUnicode) {
  const std::string s = "h\xC3\xA9llo \xE2\x80\x8B zero-width \xE2\x80\xAE bidi \xF0\x9F\x98\x80";
  EXPECT_EQ(Clean(s), s);
  EXPECT_EQ(Clean("<|im_end|> <think>"), "<|im_end|> <think>") << "tokenization handles these";
}

TEST(SanitizeUserInput, RejectsInvalidUtf8WithOffset) {
  for (std::string bad : {"\xC0\xAF", "ok\x80", "\xED\xA0\x80", "cut\xE2\x82", "\xF8\x88\x80\x80\x80"}) {
    auto r = SanitizeUserInput(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("not valid UTF-8"), std::string::npos);
  }
}

TEST(EscapeForLog, KeepsOneRecordOnOneLine) {
  EXPECT_EQ(EscapeForLog("a\nb\x1b[2J"), "a\\x0Ab\\x1B[2J");
  EXPECT_EQ(EscapeForLog("\xE2\x80\xA8|\xE2\x80\xAE|\xC2\x85"), "\\u{2028}|\\u{202E}|\\x85");
  EXPECT_EQ(EscapeForLog("bad\xFF"), "bad\\xFF");
  EXPECT_EQ(EscapeForLog("back\\slash \xC3\xA9"), "back\\\\slash \xC3\xA9");
}

}  // namespace
}  // namespace llmd::chat
