// Prompt overflow on the fake engine: a conversation or a session that does not fit the
// context, under the default (refused with the counts) and drop_oldest (the oldest whole turns
// dropped, the system prompt and the newest turn kept, the drops reported).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/prompt_overflow.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(build/namespaces): the rig is this file's vocabulary

chat::Message M(std::string role, std::string content) { return {std::move(role), std::move(content), {}, {}}; }

// A system prompt and three turns; the fake engine makes one token of each byte.
const std::vector<chat::Message> kChat = {
    M("system", "Be brief."),
    M("user", "First question, a long one about the weather in the mountains."), M("assistant", "Rain."),
    M("user", "Second question, about the sea."), M("assistant", "Waves."),
    M("user", "Third?")};

Job ConversationJob(std::vector<chat::Message> messages, engine::ContextOverflow overflow) {
  Job job;
  job.prompt = Conversation{std::move(messages), {}};
  job.options.max_tokens = 4;
  job.options.sampling = engine::SamplingParams::Greedy();
  job.overflow = overflow;
  return job;
}

size_t PromptLength(const std::vector<chat::Message>& messages) {
  return FakeEngine().ConversationPrompt(messages, {}, true).value().prompt.size();
}

std::vector<chat::Message> Kept(size_t dropped) {
  return WithoutOldestTurns(kChat, ConversationTurnStarts(kChat), dropped);
}

// The tokens the job's sequence was fed as its prompt (a fresh rig: nothing reused).
std::vector<TokenId> FedPrompt(Rig& rig, size_t prompt_tokens) {
  for (int32_t s = 0; s < rig.fake->sequences(); ++s) {
    std::vector<TokenId> held = rig.fake->history(s);
    if (held.size() >= prompt_tokens) return {held.begin(), held.begin() + static_cast<std::ptrdiff_t>(prompt_tokens)};
  }
  return {};
}

TEST(EngineWorkerOverflow, ByDefaultAConversationTooLongIsRefusedWithTheCounts) {
  const size_t whole = PromptLength(kChat);
  Rig rig(FakeEngineOptions{.context_tokens = static_cast<int32_t>(whole)});
  auto r = rig.Run(ConversationJob(kChat, engine::ContextOverflow::kError));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_NE(r.error().message().find(std::to_string(whole) + " tokens >= context of " + std::to_string(whole)),
            std::string::npos)
      << r.error().message();
}

TEST(EngineWorkerOverflow, DropOldestDropsTheFewestWholeTurnsAndReportsThem) {
  const size_t whole = PromptLength(kChat);
  const size_t one_dropped = PromptLength(Kept(1));
  // Room for the prompt without its first turn and the 4 tokens asked for, not for the whole one.
  ASSERT_GT(whole, one_dropped + 4);
  Rig rig(FakeEngineOptions{.context_tokens = static_cast<int32_t>(one_dropped + 4)});
  auto done = rig.Run(ConversationJob(kChat, engine::ContextOverflow::kDropOldest));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 1);
  EXPECT_EQ(done->stats.dropped_tokens, static_cast<int32_t>(whole - one_dropped));
  EXPECT_EQ(done->stats.prompt_tokens, static_cast<int32_t>(one_dropped));
  // What was fed is exactly the template's rendering of the kept messages.
  EXPECT_EQ(FedPrompt(rig, one_dropped), FakeEngine().ConversationPrompt(Kept(1), {}, true).value().prompt);
  EXPECT_EQ(done->tokens, Solo(ConversationJob(Kept(1), engine::ContextOverflow::kError)));
}

TEST(EngineWorkerOverflow, DropOldestKeepsTheSystemPromptAndTheNewestTurn) {
  const size_t kept = PromptLength(Kept(2));  // system + "Third?"
  Rig rig(FakeEngineOptions{.context_tokens = static_cast<int32_t>(kept + 1)});
  auto done = rig.Run(ConversationJob(kChat, engine::ContextOverflow::kDropOldest));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 2);
  EXPECT_EQ(FedPrompt(rig, kept), FakeEngine().ConversationPrompt({kChat[0], kChat[5]}, {}, true).value().prompt);

  // One token less and even the system prompt with the newest turn does not fit: refused.
  Rig small(FakeEngineOptions{.context_tokens = static_cast<int32_t>(kept)});
  auto refused = small.Run(ConversationJob(kChat, engine::ContextOverflow::kDropOldest));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_NE(refused.error().message().find("dropping all 2 older turns leaves " + std::to_string(kept) + " tokens"),
            std::string::npos)
      << refused.error().message();
}

TEST(EngineWorkerOverflow, AFittingPromptIsUntouchedAndReportsNoDrops) {
  Rig rig;
  auto done = rig.Run(ConversationJob(kChat, engine::ContextOverflow::kDropOldest));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 0);
  EXPECT_EQ(done->stats.dropped_tokens, 0);
  EXPECT_EQ(done->stats.prompt_tokens, static_cast<int32_t>(PromptLength(kChat)));
}

TEST(EngineWorkerOverflow, AOneShotChatHasNoTurnToDrop) {
  Job job = Chat("sys", std::string(200, 'x'), 4);
  job.overflow = engine::ContextOverflow::kDropOldest;
  Rig rig(FakeEngineOptions{.context_tokens = 64});
  auto r = rig.Run(std::move(job));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_NE(r.error().message().find("no older turn to drop"), std::string::npos) << r.error().message();
}

// --- Sessions.

Job SessionJob(std::string user, engine::ContextOverflow overflow = engine::ContextOverflow::kDropOldest) {
  Job job = Turn("s", "Be brief.", std::move(user), 5);
  job.overflow = overflow;
  return job;
}

// What a session holds after turns with these questions and replies, started afresh.
std::vector<TokenId> SessionTokens(const std::vector<std::string>& users, const std::vector<std::vector<TokenId>>& replies) {
  FakeEngine fake;
  std::vector<TokenId> out = fake.ChatPrompt("Be brief.", users[0], true).value();
  for (size_t i = 0; i < users.size(); ++i) {
    if (i > 0) {
      auto next = fake.NextTurnPrompt("Be brief.", users[i], true).value();
      out.insert(out.end(), next.begin(), next.end());
    }
    out.insert(out.end(), replies[i].begin(), replies[i].end());
  }
  return out;
}

TEST(EngineWorkerOverflow, ASessionRecordsWhereEachTurnStarts) {
  Rig rig;
  std::vector<std::vector<TokenId>> replies;
  const std::vector<std::string> users = {"One?", "Two?", "Three?"};
  for (const auto& user : users) {
    auto done = rig.Run(SessionJob(user));
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    replies.push_back(done->tokens);
  }
  auto stored = rig.worker->SessionCopy("s");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->tokens, SessionTokens(users, replies));
  // Each start is where "<S>user" opens: after the system message, then after each reply.
  const size_t system = FakeEngine().ChatPrompt("Be brief.", "One?", true).value().size() -
                        FakeEngine().NextTurnPrompt("Be brief.", "One?", true).value().size();
  std::vector<uint32_t> expected{static_cast<uint32_t>(system)};
  for (size_t i = 1; i < users.size(); ++i) {
    expected.push_back(static_cast<uint32_t>(SessionTokens({users.begin(), users.begin() + i + 1},
                                                           {replies.begin(), replies.begin() + i + 1})
                                                 .size() -
                                             replies[i].size() -
                                             FakeEngine().NextTurnPrompt("", users[i], true).value().size()));
  }
  EXPECT_EQ(stored->turn_starts, expected);
}

TEST(EngineWorkerOverflow, ASessionDropsItsOldestTurnsAndKeepsTheShorterHistory) {
  // Learn the replies on a roomy worker, then replay on one whose context the third turn overflows.
  const std::vector<std::string> users = {"First, a long question about mountains?", "Second?", "Third?"};
  std::vector<std::vector<TokenId>> replies;
  {
    Rig roomy;
    for (const auto& user : users) replies.push_back(roomy.Run(SessionJob(user)).value().tokens);
  }
  const size_t two_turns = SessionTokens({users[0], users[1]}, {replies[0], replies[1]}).size();
  const size_t third_prompt = FakeEngine().NextTurnPrompt("", users[2], true).value().size();
  Rig rig(FakeEngineOptions{.context_tokens = static_cast<int32_t>(two_turns + third_prompt)});  // one short
  ASSERT_TRUE(rig.Run(SessionJob(users[0])).has_value());
  ASSERT_TRUE(rig.Run(SessionJob(users[1])).has_value());

  // The default refuses, with the counts, and leaves the session as it was.
  auto refused = rig.Run(SessionJob(users[2], engine::ContextOverflow::kError));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_EQ(rig.worker->SessionCopy("s")->tokens.size(), two_turns);

  auto done = rig.Run(SessionJob(users[2]));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 1);
  // The session now holds exactly what one started at the second turn would.
  auto stored = rig.worker->SessionCopy("s");
  ASSERT_TRUE(stored.has_value());
  const std::vector<TokenId> expected = SessionTokens({users[1], users[2]}, {replies[1], done->tokens});
  EXPECT_EQ(stored->tokens, expected);
  EXPECT_EQ(done->stats.prompt_tokens, static_cast<int32_t>(expected.size() - done->tokens.size()));
  EXPECT_EQ(done->stats.dropped_tokens, static_cast<int32_t>(two_turns + third_prompt - done->stats.prompt_tokens));
  EXPECT_EQ(stored->turn_starts.size(), 2u);
  EXPECT_EQ(stored->turn_starts.front(), FakeEngine().ChatPrompt("Be brief.", "x", true).value().size() -
                                             FakeEngine().NextTurnPrompt("", "x", true).value().size());
}

TEST(EngineWorkerOverflow, ASessionRestoredWithoutTurnStartsKeepsItsOldHistoryWhole) {
  const std::vector<TokenId> old = SessionTokens({"An old question?"}, {{40, 41, 42}});
  Rig rig(FakeEngineOptions{.context_tokens = static_cast<int32_t>(old.size() + 12)});
  rig.worker->PutSession("s", "Be brief.", old);  // as a version 2 session file restores it
  auto refused = rig.Run(SessionJob("A new question that does not fit?"));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("no older turn to drop"), std::string::npos) << refused.error().message();
  EXPECT_EQ(rig.worker->SessionCopy("s")->tokens, old);
}

}  // namespace
}  // namespace llmd::sched
