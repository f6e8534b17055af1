#include "chat/think_stripper.h"

#include <gtest/gtest.h>

#include <vector>

namespace llmd::chat {
namespace {

// Feeds `chunks` one by one and returns everything shown.
std::string Stream(const std::vector<std::string>& chunks, bool starts_inside = false) {
  ThinkStripper s(starts_inside);
  std::string out;
  for (const auto& c : chunks) out += s.Push(c);
  return out + s.Finish();
}

// The same text cut into pieces of `n` bytes.
std::string StreamInPieces(const std::string& text, size_t n) {
  std::vector<std::string> chunks;
  for (size_t i = 0; i < text.size(); i += n) chunks.push_back(text.substr(i, n));
  return Stream(chunks);
}

TEST(ThinkStripper, RemovesBlocksAndTheWhitespaceAfterThem) {
  EXPECT_EQ(StripThinkTags("<think>\n\n</think>\n\nHello"), "Hello");
  EXPECT_EQ(StripThinkTags("<think>plan</think>Answer"), "Answer");
  EXPECT_EQ(StripThinkTags("A <think>x</think> B"), "A B");
  EXPECT_EQ(StripThinkTags("no tags at all"), "no tags at all");
}

TEST(ThinkStripper, TagsSplitAtEveryByteNeverLeak) {
  const std::string text = "Hi <think>secret plan</think>there <b>bold</b> <thin";
  const std::string expected = "Hi there <b>bold</b> <thin";
  for (size_t n = 1; n <= text.size(); ++n) {
    std::string out = StreamInPieces(text, n);
    EXPECT_EQ(out, expected) << "piece size " << n;
    EXPECT_EQ(out.find("secret"), std::string::npos);
  }
}

TEST(ThinkStripper, UnterminatedBlockHidesTheRest) {
  ThinkStripper s;
  EXPECT_EQ(s.Push("Visible <think>never "), "Visible ");
  EXPECT_EQ(s.Push("shown"), "");
  EXPECT_EQ(s.Finish(), "");
  EXPECT_TRUE(s.inside());
}

TEST(ThinkStripper, NestedBlocksCountDepth) {
  EXPECT_EQ(StripThinkTags("a<think>x<think>y</think>z</think>b"), "ab");
}

TEST(ThinkStripper, CloserWithoutOpenerIsDropped) {
  EXPECT_EQ(StripThinkTags("text</think> more"), "textmore");
}

TEST(ThinkStripper, StartsInsideWhenThePromptOpenedTheBlock) {
  EXPECT_EQ(Stream({"reasoning ", "</thi", "nk>\n\nAnswer"}, /*starts_inside=*/true), "Answer");
}

TEST(ThinkStripper, LargeBlockUsesBoundedMemory) {
  ThinkStripper s;
  std::string shown = s.Push("<think>");
  const std::string kb(1024, 'x');
  for (int i = 0; i < 50; ++i) shown += s.Push(kb);  // a 50 KB think block
  shown += s.Push("</think>done");
  EXPECT_EQ(shown + s.Finish(), "done");
}

TEST(ThinkStripper, PartialTagAtEndIsText) {
  EXPECT_EQ(Stream({"x <", "/thi"}), "x </thi");
  EXPECT_EQ(Stream({"a<", "b"}), "a<b");
}

TEST(ThinkStripper, MultibyteTextPassesWhole) {
  EXPECT_EQ(StripThinkTags("\xC3\xA9<think>\xE2\x82\xAC</think>\xF0\x9F\x98\x80"),
            "\xC3\xA9\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace llmd::chat
