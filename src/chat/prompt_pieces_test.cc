#include "chat/prompt_pieces.h"

#include <gtest/gtest.h>

namespace llmd::chat {
namespace {

std::string Join(const PromptPieces& p) {
  std::string s;
  for (const auto& piece : p) s += piece.text;
  return s;
}

TEST(SplitAtMarkers, SeparatesTemplateAndUserText) {
  auto r = SplitAtMarkers("<s>[A]</s><u>[B]</u>", {"[A]", "[B]"}, {"sys", "<|im_end|>"});
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 5u);
  EXPECT_FALSE((*r)[0].user);
  EXPECT_TRUE((*r)[1].user);
  EXPECT_EQ((*r)[3].text, "<|im_end|>");
  EXPECT_TRUE((*r)[3].user);
  EXPECT_EQ(Join(*r), "<s>sys</s><u><|im_end|></u>");
}

TEST(SplitAtMarkers, RejectsMissingOrRepeatedMarkers) {
  EXPECT_FALSE(SplitAtMarkers("no marker", {"[A]"}, {"x"}).has_value());
  EXPECT_FALSE(SplitAtMarkers("[A][A]", {"[A]"}, {"x"}).has_value());
  EXPECT_FALSE(SplitAtMarkers("[B][A]", {"[A]", "[B]"}, {"x", "y"}).has_value());
}

TEST(ChatMl, FirstTurnEndsWithQwen3ThinkingOffPrompt) {
  std::string s = Join(ChatMlFirstTurn("Be brief.", "Hi"));
  EXPECT_EQ(s, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
               "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(Join(ChatMlFirstTurn("", "Hi")).find("system"), std::string::npos);
}

TEST(ChatMl, NextTurnClosesTheReplyFirst) {
  PromptPieces p = ChatMlNextTurn("More");
  EXPECT_TRUE(Join(p).starts_with("<|im_end|>\n<|im_start|>user\nMore"));
  EXPECT_TRUE(p[1].user);
}

}  // namespace
}  // namespace llmd::chat
