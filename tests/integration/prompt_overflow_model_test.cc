// Prompt overflow on the real template (the tiny Qwen3 model): with drop_oldest, what the
// worker feeds is what the template renders for the kept messages, a tool turn goes whole,
// and a session cut at its recorded turn starts holds exactly what a session started at the
// first kept turn would.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "sched/engine_worker.h"
#include "sched/prompt_overflow.h"
#include "sched/worker_test_rig.h"
#include "tests/support/llama_test_engine.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using sched::test_rig::Await;

chat::Message M(std::string role, std::string content) { return {std::move(role), std::move(content), {}, {}}; }

// A system prompt, a plain turn, a tool turn (the call and its result), and the newest turn.
std::vector<chat::Message> ToolChat() {
  chat::Message call = M("assistant", "");
  call.tool_calls.push_back({"call_1", "get_weather", R"({"city":"Paris"})"});
  chat::Message result = M("tool", R"({"sky":"clear","wind":"light","temperature":21})");
  result.tool_call_id = "call_1";
  return {M("system", "You are a careful assistant. Answer in one short sentence."),
          M("user", "Tell me a long story about the sea, the mountains and the rivers between them."),
          M("assistant", "Once the rivers ran from the mountains to the sea, and the sea sent rain back."),
          M("user", "What is the weather in Paris?"),
          call,
          result,
          M("assistant", "It is clear and 21 degrees in Paris."),
          M("user", "And tomorrow?")};
}

engine::ChatFormat WithTools() {
  engine::ChatFormat f;
  f.tools = {{"get_weather", "Weather", R"({"type":"object","properties":{"city":{"type":"string"}}})"}};
  return f;
}

constexpr int32_t kContext = 512;

std::unique_ptr<sched::EngineWorker> Worker(int32_t context_tokens = kContext) {
  auto engine = LoadTestEngine(TinyModelPath(), context_tokens);
  if (engine == nullptr) return nullptr;
  sched::WorkerOptions o;
  o.admission_window_ms = 0;
  return std::make_unique<sched::EngineWorker>(std::move(engine), o);
}

Result<engine::Completion> RunJob(sched::EngineWorker& worker, sched::Job job) {
  auto channel = job.channel;
  if (Status s = worker.Submit(std::move(job)); !s.ok()) return s;
  return Await(*channel);
}

sched::Job ConversationJob(std::vector<chat::Message> messages, engine::ContextOverflow overflow) {
  sched::Job job;
  job.prompt = sched::Conversation{std::move(messages), WithTools()};
  job.options.max_tokens = 4;
  job.options.sampling = engine::SamplingParams::Greedy();
  job.overflow = overflow;
  return job;
}

size_t RenderedLength(const engine::Engine& e, const std::vector<chat::Message>& messages) {
  auto plan = e.ConversationPrompt(messages, WithTools(), true);
  EXPECT_TRUE(plan.has_value()) << plan.error().ToString();
  return plan.has_value() ? plan->prompt.size() : 0;
}

// Pads `*text` a few words at a time until `length()` reaches `target`, overshooting by at
// most 8 tokens (the engine may round the context it was asked for, so the tests measure
// instead of assuming).
template <typename Length>
void PadUntil(std::string* text, size_t target, const Length& length) {
  for (int i = 0; i < kContext && length() < target; ++i) *text += " water water water water water water water water";
}

TEST(PromptOverflowModel, TheKeptConversationIsExactlyTheTemplatesRendering) {
  auto renderer = LoadTestEngine(TinyModelPath(), kContext);
  ASSERT_NE(renderer, nullptr);
  const size_t n_ctx = static_cast<size_t>(renderer->model_info().context_tokens);
  auto chat = ToolChat();
  const auto starts = sched::ConversationTurnStarts(chat);
  ASSERT_EQ(starts.size(), 3u);
  // The first turn grows until the whole chat no longer fits; without it, it does.
  PadUntil(&chat[1].content, n_ctx, [&] { return RenderedLength(*renderer, chat); });
  const size_t whole = RenderedLength(*renderer, chat);
  const size_t without_first = RenderedLength(*renderer, sched::WithoutOldestTurns(chat, starts, 1));
  ASSERT_GE(whole, n_ctx);
  ASSERT_LT(without_first, n_ctx);

  auto worker = Worker();
  ASSERT_NE(worker, nullptr);
  auto done = RunJob(*worker, ConversationJob(chat, engine::ContextOverflow::kDropOldest));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 1);
  EXPECT_EQ(done->stats.dropped_tokens, static_cast<int32_t>(whole - without_first));
  EXPECT_EQ(done->stats.prompt_tokens, static_cast<int32_t>(without_first));
  // The same greedy answer as the kept messages sent as they are to a fresh worker: the
  // prompt fed was the template's rendering of them (the tool turn whole), token for token.
  auto fresh = Worker();
  ASSERT_NE(fresh, nullptr);
  auto kept = RunJob(*fresh, ConversationJob(sched::WithoutOldestTurns(chat, starts, 1), engine::ContextOverflow::kError));
  ASSERT_TRUE(kept.has_value()) << kept.error().ToString();
  EXPECT_EQ(kept->stats.prompt_tokens, static_cast<int32_t>(without_first));
  EXPECT_EQ(kept->stats.cached_tokens, 0);
  EXPECT_EQ(done->tokens, kept->tokens);

  // The default refuses what drop_oldest fitted, with the counts.
  auto by_default = RunJob(*worker, ConversationJob(chat, engine::ContextOverflow::kError));
  ASSERT_FALSE(by_default.has_value());
  EXPECT_EQ(by_default.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_NE(by_default.error().message().find(std::to_string(whole) + " tokens >= context of " +
                                              std::to_string(n_ctx)),
            std::string::npos)
      << by_default.error().message();

  // A newest turn that does not fit even alone with the system prompt: refused, with the counts.
  auto huge = ToolChat();
  PadUntil(&huge.back().content, n_ctx, [&] {
    return RenderedLength(*renderer, sched::WithoutOldestTurns(huge, starts, 2));
  });
  const size_t newest_only = RenderedLength(*renderer, sched::WithoutOldestTurns(huge, starts, 2));
  auto refused = RunJob(*worker, ConversationJob(huge, engine::ContextOverflow::kDropOldest));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().reason(), ErrorReason::kPromptTooLong);
  EXPECT_NE(refused.error().message().find("dropping all 2 older turns leaves " + std::to_string(newest_only)),
            std::string::npos)
      << refused.error().message();
}

sched::Job TurnJob(const std::string& user) {
  sched::Job job;
  job.prompt = sched::SessionTurn{"s", "Be brief.", user};
  job.options.max_tokens = 4;
  job.options.sampling = engine::SamplingParams::Greedy();
  job.overflow = engine::ContextOverflow::kDropOldest;
  return job;
}

// What a session holds after these turns, started at the first of them.
std::vector<engine::TokenId> SessionTokens(const engine::Engine& e, const std::vector<std::string>& users,
                                           const std::vector<std::vector<engine::TokenId>>& replies) {
  std::vector<engine::TokenId> out;
  for (size_t i = 0; i < users.size(); ++i) {
    auto turn = i == 0 ? e.ChatPrompt("Be brief.", users[i], true) : e.NextTurnPrompt("Be brief.", users[i], true);
    EXPECT_TRUE(turn.has_value());
    if (!turn.has_value()) return out;
    out.insert(out.end(), turn->begin(), turn->end());
    out.insert(out.end(), replies[i].begin(), replies[i].end());
  }
  return out;
}

TEST(PromptOverflowModel, ASessionCutAtItsTurnStartsIsASessionStartedThere) {
  auto renderer = LoadTestEngine(TinyModelPath(), kContext);
  ASSERT_NE(renderer, nullptr);
  const size_t n_ctx = static_cast<size_t>(renderer->model_info().context_tokens);
  std::vector<std::string> users = {"Tell me about the rivers.", "Shorter?",
                                    "Why is that so, and what else should I know about the rivers and the sea?"};
  // The first turn takes all but 40 tokens: the second (replies are at most 4 tokens) still
  // fits, the third, longer, does not.
  PadUntil(&users[0], n_ctx - 40, [&] { return renderer->ChatPrompt("Be brief.", users[0], true)->size(); });
  auto worker = Worker();
  ASSERT_NE(worker, nullptr);
  std::vector<std::vector<engine::TokenId>> replies;
  for (size_t i = 0; i < 2; ++i) {
    auto done = RunJob(*worker, TurnJob(users[i]));
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    EXPECT_EQ(done->stats.dropped_turns, 0);
    replies.push_back(done->tokens);
  }
  auto before = worker->SessionCopy("s");
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->tokens, SessionTokens(*renderer, {users[0], users[1]}, replies));
  ASSERT_EQ(before->turn_starts.size(), 2u);  // the template's message starts were found
  const size_t third = renderer->NextTurnPrompt("Be brief.", users[2], true)->size();
  ASSERT_GE(before->tokens.size() + third, n_ctx);  // so the third turn overflows

  auto done = RunJob(*worker, TurnJob(users[2]));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.dropped_turns, 1);
  EXPECT_EQ(done->stats.dropped_tokens,
            static_cast<int32_t>(before->tokens.size() + third - static_cast<size_t>(done->stats.prompt_tokens)));
  auto after = worker->SessionCopy("s");
  ASSERT_TRUE(after.has_value());
  // Exactly the tokens of a session whose first turn was the second question.
  EXPECT_EQ(after->tokens, SessionTokens(*renderer, {users[1], users[2]}, {replies[1], done->tokens}));
}

}  // namespace
}  // namespace llmd::testing
