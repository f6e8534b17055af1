#include "chat/stop_strings.h"

#include <gtest/gtest.h>

namespace llmd::chat {
namespace {

// Feeds `text` split at every pair of points and checks the visible output is the same.
void ExpectEverySplit(const std::vector<std::string>& stops, const std::string& text,
                      const std::string& visible, bool stopped) {
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); ++b) {
      StopStrings s(stops);
      std::string out = s.Push(text.substr(0, a));
      out += s.Push(text.substr(a, b - a));
      out += s.Push(text.substr(b));
      out += s.Finish();
      ASSERT_EQ(out, visible) << "split at " << a << "," << b;
      ASSERT_EQ(s.stopped(), stopped);
    }
  }
}

TEST(StopStrings, CutsAtTheFirstStopStringAcrossAnySplit) {
  ExpectEverySplit({"END"}, "one two END three", "one two ", true);
  ExpectEverySplit({"\n\n", "###"}, "a### b\n\nc", "a", true);
}

TEST(StopStrings, PassesTextThroughWhenNoStopStringCompletes) {
  ExpectEverySplit({"END"}, "the EN and EN", "the EN and EN", false);
  ExpectEverySplit({}, "anything", "anything", false);
  ExpectEverySplit({""}, "empty stops are ignored", "empty stops are ignored", false);
}

TEST(StopStrings, NeverShowsAPartialStopString) {
  StopStrings s({"STOP"});
  EXPECT_EQ(s.Push("go ST"), "go ");
  EXPECT_EQ(s.Push("O"), "");
  EXPECT_EQ(s.Push("P and more"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.Push("later"), "");
}

TEST(StopStrings, HoldsWholeCharacters) {
  StopStrings s({"\xC3\xA9t\xC3\xA9"});  // "été"
  EXPECT_EQ(s.Push("caf\xC3\xA9"), "caf");
  EXPECT_EQ(s.Push("!"), "\xC3\xA9!");
  ExpectEverySplit({"\xC3\xA9t\xC3\xA9"}, "un \xC3\xA9t\xC3\xA9 chaud", "un ", true);
}

}  // namespace
}  // namespace llmd::chat
