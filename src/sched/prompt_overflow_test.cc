#include "sched/prompt_overflow.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmd::sched {
namespace {

chat::Message M(std::string role, std::string content) { return {std::move(role), std::move(content), {}, {}}; }

std::vector<std::string> Contents(const std::vector<chat::Message>& messages) {
  std::vector<std::string> out;
  for (const auto& m : messages) out.push_back(m.content);
  return out;
}

// system, then three turns: a plain one, a tool turn (call and result), and the newest.
std::vector<chat::Message> ToolChat() {
  chat::Message call = M("assistant", "");
  call.tool_calls.push_back({"call_1", "get_weather", "{\"city\":\"Oslo\"}"});
  chat::Message result = M("tool", "rain");
  result.tool_call_id = "call_1";
  return {M("system", "sys"),  M("user", "u1"),  M("assistant", "a1"), M("user", "u2"),
          call,                result,           M("assistant", "a2"), M("user", "u3")};
}

TEST(PromptOverflow, TurnsStartAtUserMessagesAfterTheSystemPrompt) {
  EXPECT_EQ(ConversationTurnStarts(ToolChat()), (std::vector<size_t>{1, 3, 7}));
  // Leading system messages are all kept; a reply before any user message opens the first turn.
  EXPECT_EQ(ConversationTurnStarts({M("system", "a"), M("system", "b"), M("assistant", "hi"), M("user", "q")}),
            (std::vector<size_t>{2, 3}));
  EXPECT_TRUE(ConversationTurnStarts({M("system", "only")}).empty());
  EXPECT_EQ(ConversationTurnStarts({M("user", "q")}), (std::vector<size_t>{0}));
}

TEST(PromptOverflow, DroppingKeepsTheSystemPromptAndWholeToolTurns) {
  const auto chat = ToolChat();
  const auto starts = ConversationTurnStarts(chat);
  EXPECT_EQ(Contents(WithoutOldestTurns(chat, starts, 0)), Contents(chat));
  // The first turn goes whole; the tool call, its result and the reply stay together.
  const auto one = WithoutOldestTurns(chat, starts, 1);
  EXPECT_EQ(Contents(one), (std::vector<std::string>{"sys", "u2", "", "rain", "a2", "u3"}));
  EXPECT_EQ(one[2].tool_calls.size(), 1u);
  EXPECT_EQ(one[3].tool_call_id, "call_1");
  // Dropping the tool turn drops its call and result with it: no orphaned tool message.
  EXPECT_EQ(Contents(WithoutOldestTurns(chat, starts, 2)), (std::vector<std::string>{"sys", "u3"}));
}

// Lengths of a prompt by turns dropped: 100, 70, 40, 25 (the last: system and newest turn).
Result<size_t> Lengths(size_t k) { return std::vector<size_t>{100, 70, 40, 25}.at(k); }

TEST(PromptOverflow, DropsTheFewestTurnsThatFit) {
  EXPECT_EQ(FewestTurnsToDrop(3, 101, Lengths).value(), 0u);  // fits as it is
  EXPECT_EQ(FewestTurnsToDrop(3, 100, Lengths).value(), 1u);  // 100 tokens leave none to generate
  EXPECT_EQ(FewestTurnsToDrop(3, 71, Lengths).value(), 1u);
  EXPECT_EQ(FewestTurnsToDrop(3, 70, Lengths).value(), 2u);
  EXPECT_EQ(FewestTurnsToDrop(3, 26, Lengths).value(), 3u);
}

TEST(PromptOverflow, AsksForFewLengthsOnALongChat) {
  int asked = 0;
  auto length = [&](size_t k) -> Result<size_t> {
    ++asked;
    return 10000 - 10 * k;  // 1000 turns of 10 tokens
  };
  EXPECT_EQ(FewestTurnsToDrop(999, 5000, length).value(), 501u);
  EXPECT_LE(asked, 14);  // whole, all dropped, then a binary search: never one render a turn
}

TEST(PromptOverflow, TooLongEvenWithoutEveryOlderTurnSaysTheCounts) {
  auto r = FewestTurnsToDrop(3, 25, Lengths);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_EQ(r.error().message(),
            "prompt too long (100 tokens >= context of 25) even with overflow drop_oldest: dropping all 3 older "
            "turns leaves 25 tokens (the system prompt and the newest turn); at most 24 prompt tokens fit, with "
            "one left to generate");
  auto none = FewestTurnsToDrop(0, 50, Lengths);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().message(),
            "prompt too long (100 tokens >= context of 50) and overflow drop_oldest has no older turn to drop: the "
            "system prompt and the newest turn are kept; at most 49 prompt tokens fit, with one left to generate");
}

TEST(PromptOverflow, ARenderingErrorComesBackAsItIs) {
  auto failing = [](size_t k) -> Result<size_t> {
    if (k > 0) return InvalidArgumentError("bad template");
    return size_t{100};
  };
  auto r = FewestTurnsToDrop(2, 50, failing);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "bad template");
}

TEST(PromptOverflow, UserMessageStartIsTheSecondToLastMessageStart) {
  constexpr engine::TokenId S = 1;  // the message-start token
  // <S>system..<S>user..<S>assistant: the user message opens at index 3.
  EXPECT_EQ(UserMessageStart(std::vector<engine::TokenId>{S, 7, 7, S, 8, S, 9}, S), 3u);
  // A next turn begins with the end of the reply before it, then <S>user..<S>assistant.
  EXPECT_EQ(UserMessageStart(std::vector<engine::TokenId>{5, 6, S, 8, S, 9}, S), 2u);
  EXPECT_EQ(UserMessageStart(std::vector<engine::TokenId>{5, S, 9}, S), std::nullopt);
  EXPECT_EQ(UserMessageStart(std::vector<engine::TokenId>{S, 8, S, 9}, -1), std::nullopt);
}

TEST(PromptOverflow, DroppingSessionTurnsKeepsTheSystemPromptAndMovesLaterStarts) {
  // system [0,2), turn 1 [2,5), turn 2 [5,7), turn 3 [7,9)
  std::vector<engine::TokenId> tokens{0, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint32_t> starts{2, 5, 7};
  EXPECT_EQ(DropSessionTurns(&tokens, &starts, 0), 0u);
  EXPECT_EQ(DropSessionTurns(&tokens, &starts, 1), 3u);
  EXPECT_EQ(tokens, (std::vector<engine::TokenId>{0, 1, 5, 6, 7, 8}));
  EXPECT_EQ(starts, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(DropSessionTurns(&tokens, &starts, 1), 2u);
  EXPECT_EQ(tokens, (std::vector<engine::TokenId>{0, 1, 7, 8}));
  EXPECT_EQ(starts, (std::vector<uint32_t>{2}));
}

}  // namespace
}  // namespace llmd::sched
