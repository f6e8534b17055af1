// The seed's model kind, a hybrid (Qwen3.5: Gated DeltaNet layers with a recurrent state,
// every fourth layer attention), through the real daemon: batching, prefix reuse through
// recurrent-state checkpoints, chat sessions and their files. The recurrent state cannot be
// cut back to a shared prefix, so every case here that reuses one goes through a checkpoint.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "llmd/client.h"
#include "tests/support/concurrent_streams.h"
#include "tests/support/daemon_harness.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {
namespace {

namespace fs = std::filesystem;

GenerateOptions Greedy(uint32_t max_tokens) {
  GenerateOptions o;
  o.max_tokens = max_tokens;
  o.temperature = 0.0f;
  return o;
}

const std::string kSystem =
    "You are a careful assistant for a small library. You answer questions about opening hours, "
    "borrowing rules, late fees and events, briefly and politely, and you never invent facts.";

GenerateOptions WithSystem(uint32_t max_tokens, const std::string& system = kSystem) {
  GenerateOptions o = Greedy(max_tokens);
  o.system = system;
  return o;
}

class HybridModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new DaemonProcess({"--parallel", "4", "--max-new-tokens", "64"}, Qwen35TinyPath());
    ASSERT_TRUE(daemon_->ready()) << daemon_->log();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  // What a request gives on a daemon that has served nothing else.
  static Generation Solo(const std::string& prompt, const GenerateOptions& o) {
    DaemonProcess fresh({"--parallel", "4"}, Qwen35TinyPath());
    EXPECT_TRUE(fresh.ready()) << fresh.log();
    auto g = LlmClient(fresh.socket()).GenerateStream(prompt, o, nullptr);
    EXPECT_TRUE(g.has_value()) << g.error().ToString();
    return g.has_value() ? *g : Generation();
  }
  static Generation Ask(const std::string& prompt, const GenerateOptions& o) {
    auto g = LlmClient(daemon_->socket()).GenerateStream(prompt, o, nullptr);
    EXPECT_TRUE(g.has_value()) << prompt << ": " << g.error().ToString();
    return g.has_value() ? *g : Generation();
  }
  static inline DaemonProcess* daemon_ = nullptr;
};

TEST_F(HybridModelTest, TheModelLoadsAsRecurrentMemoryWithCheckpoints) {
  EXPECT_NE(daemon_->log().find("memory=\"recurrent (checkpoints)\""), std::string::npos) << daemon_->log();
}

// A pinned system prompt (its attention KV and recurrent state after it, kept in host memory)
// is warm for the first request and again after an idle release has freed the cache, and a
// request that starts from it answers as a cold daemon does.
TEST_F(HybridModelTest, APinnedSystemPromptIsWarmFirstAndAfterAnIdleRelease) {
  DaemonProcess pinned({"--parallel", "2", "--pin-prompt", kSystem, "--idle-release-after", "1"}, Qwen35TinyPath());
  ASSERT_TRUE(pinned.ready()) << pinned.log();
  EXPECT_NE(pinned.log().find("prompt_pinned"), std::string::npos) << pinned.log();
  LlmClient client(pinned.socket());
  const std::string first_question = "When do you open on Sunday?";
  auto first = client.GenerateStream(first_question, WithSystem(8), nullptr);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_GT(first->cached_tokens, 30u) << "the first request started from the pinned prompt";
  EXPECT_EQ(first->text, Solo(first_question, WithSystem(8)).text);

  ASSERT_TRUE(WaitFor([&] { return pinned.log().find("working_memory_released") != std::string::npos; }, kLiveness))
      << pinned.log();
  const std::string second_question = "Are there events for children?";
  auto second = client.GenerateStream(second_question, WithSystem(8), nullptr);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_GT(second->cached_tokens, 30u) << "still pinned after the idle release";
  EXPECT_EQ(second->text, Solo(second_question, WithSystem(8)).text);
}

// The failure this suite was written for: the second request sharing a system prompt used to
// fail with "llama_decode failed", and four at once failed all four.
TEST_F(HybridModelTest, TheSameSystemPromptWithOtherQuestionsInSequenceReusesItsPrefix) {
  const Generation first = Ask("When do you open on Sunday?", WithSystem(8));
  const Generation second = Ask("How much is the fee for a late book?", WithSystem(8));
  const Generation third = Ask("Are there events for children?", WithSystem(8));
  EXPECT_GT(second.cached_tokens, 30u) << "the system prompt came from a checkpoint";
  EXPECT_GT(third.cached_tokens, 30u);
  EXPECT_LT(second.cached_tokens, second.prompt_tokens);
  EXPECT_EQ(second.text, Solo("How much is the fee for a late book?", WithSystem(8)).text)
      << "reuse changed the output";
  (void)first;
}

TEST_F(HybridModelTest, FourConcurrentRequestsSharingASystemPromptAllSucceed) {
  const std::vector<std::string> questions = {"Can I renew a book online?", "Where do I return DVDs?",
                                              "Do you have study rooms?", "Is there a printer?"};
  std::vector<Generation> got(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto g = LlmClient(daemon_->socket(), std::chrono::seconds(120)).GenerateStream(questions[i], WithSystem(8), nullptr);
      EXPECT_TRUE(g.has_value()) << "request " << i << ": " << g.error().ToString();
      if (g.has_value()) got[i] = *g;
    });
  }
  for (auto& t : threads) t.join();
  // A second round: each finds the shared prefix in memory or a checkpoint.
  for (int i = 0; i < 4; ++i) {
    const Generation again = Ask(questions[i] + " Please.", WithSystem(8));
    EXPECT_GT(again.cached_tokens, 30u) << "question " << i;
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i].text, Solo(questions[i], WithSystem(8)).text) << "question " << i;
}

TEST_F(HybridModelTest, FourInterleavedStreamsEachMatchTheirSoloRun) {
  const std::vector<std::string> prompts = {"Tell me about the sea.", "Write a poem about rain.",
                                            "List some prime numbers.", "Describe a busy city street at night."};
  std::vector<std::string> solo;
  for (const auto& p : prompts) solo.push_back(Ask(p, Greedy(48)).text);
  ExpectConcurrentStreamsMatchSolo(daemon_->socket(), prompts, Greedy(48), solo);
}

// The checkpoint before the generation prompt ("<|im_start|>assistant\n...") serves the resend:
// all but those few tokens come back.
TEST_F(HybridModelTest, TheIdenticalPromptResentReusesAllButItsGenerationPrompt) {
  const std::string prompt = "What are the borrowing rules for new members?";
  const Generation a = Ask(prompt, WithSystem(8));
  const Generation b = Ask(prompt, WithSystem(8));
  EXPECT_GE(b.cached_tokens + 16, b.prompt_tokens);
  EXPECT_LT(b.cached_tokens, b.prompt_tokens);
  EXPECT_EQ(a.text, b.text);
}

TEST_F(HybridModelTest, APromptDivergingInsideTheSystemPromptIsCorrect) {
  (void)Ask("What are your opening hours?", WithSystem(8));
  const std::string other_system = kSystem.substr(0, kSystem.size() / 2) + " Answer in French.";
  const Generation g = Ask("What are your opening hours?", WithSystem(8, other_system));
  EXPECT_LT(g.cached_tokens, g.prompt_tokens);
  EXPECT_EQ(g.text, Solo("What are your opening hours?", WithSystem(8, other_system)).text);
}

TEST_F(HybridModelTest, APromptThatIsAStrictPrefixOfAResidentOneIsCorrect) {
  // A raw completion prompt, then a prefix of it: the resident sequence holds more than the
  // new prompt, which the recurrent state cannot be cut back to.
  (void)Ask("The library opens at nine and closes at five on weekdays, and on Saturdays", Greedy(4));
  const std::string shorter = "The library opens at nine and closes at five";
  EXPECT_EQ(Ask(shorter, Greedy(8)).text, Solo(shorter, Greedy(8)).text);
}

TEST_F(HybridModelTest, AChatSessionContinuesAfterAOneShotRequestOnTheSameSlot) {
  LlmClient c(daemon_->socket());
  auto t1 = c.Chat("reader", "Hello! I want to join the library.", Greedy(8), nullptr);
  ASSERT_TRUE(t1.has_value()) << t1.error().ToString();
  // Busy every slot with one-shot requests in between, then continue the conversation.
  for (int i = 0; i < 4; ++i) (void)Ask("Something else " + std::to_string(i), Greedy(4));
  auto t2 = c.Chat("reader", "What do I need to bring?", Greedy(8), nullptr);
  ASSERT_TRUE(t2.has_value()) << t2.error().ToString();
  EXPECT_GT(t2->prompt_tokens, t1->prompt_tokens + t1->tokens_generated);
  auto t3 = c.Chat("reader", "Thanks.", Greedy(8), nullptr);
  ASSERT_TRUE(t3.has_value());
  // Turn 3 restores a checkpoint from turn 2's prompt and prefills turn 2's reply with its own
  // text: the reply was decoded a token at a time, which a cold prefill of the same history is
  // not, so its live state would make the answer depend on the cache (docs/architecture.md).
  EXPECT_GT(t3->cached_tokens, t1->prompt_tokens / 2) << "the conversation so far came from a checkpoint";
  EXPECT_LE(t3->cached_tokens, t2->prompt_tokens);
}

TEST_F(HybridModelTest, APeerLeavingMidPrefillCancelsAndTheNextRequestIsCorrect) {
  const Generation reference = Ask("Count slowly.", Greedy(8));
  const size_t gone_before = daemon_->CountLog("client_gone");
  {
    RawConn c(daemon_->socket());  // a long prompt, and gone before its first token
    std::string words;
    for (int i = 0; i < 400; ++i) words += " river";
    ASSERT_TRUE(c.Send(GenerateRequest("Remember:" + words, 8, true)));
  }
  EXPECT_TRUE(WaitFor([&] { return daemon_->CountLog("client_gone") > gone_before; }))  // liveness only
      << "no cancellation was logged";
  EXPECT_EQ(Ask("Count slowly.", Greedy(8)).text, reference.text) << "the freed slot gives correct output";
}

TEST(HybridReload, SighupSwapsTheModelAndServingGoesOn) {
  DaemonProcess d({"--parallel", "2"}, Qwen35TinyPath());
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket());
  auto before = c.GenerateStream("What is new?", WithSystem(6), nullptr);
  ASSERT_TRUE(before.has_value()) << before.error().ToString();
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("llmd info reloaded", std::chrono::seconds(60))) << d.log();
  auto after = c.GenerateStream("What is new?", WithSystem(6), nullptr);
  ASSERT_TRUE(after.has_value()) << after.error().ToString();
  EXPECT_EQ(after->text, before->text) << "the same model, reloaded";
  EXPECT_EQ(after->cached_tokens, 0u) << "the new engine starts with empty memory";
}

TEST(HybridSessions, SurviveARestartThroughSaveAndRestore) {
  std::string dir = MakeTempDir();
  const GenerateOptions o = Greedy(6);
  std::string reference;
  {
    DaemonProcess d({"--session-dir", dir}, Qwen35TinyPath());
    ASSERT_TRUE(d.ready()) << d.log();
    LlmClient c(d.socket());
    ASSERT_TRUE(c.Chat("trip", "Plan a trip to the sea.", o, nullptr).has_value());
    auto t2 = c.Chat("trip", "And the way back?", o, nullptr);
    ASSERT_TRUE(t2.has_value()) << t2.error().ToString();
    reference = t2->text;
    ASSERT_TRUE(c.EndSession("trip") == std::nullopt);
    ASSERT_TRUE(c.Chat("trip", "Plan a trip to the sea.", o, nullptr).has_value());
    EXPECT_FALSE(c.SaveSession("trip").has_value());
  }
  DaemonProcess d({"--session-dir", dir}, Qwen35TinyPath());
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket());
  EXPECT_FALSE(c.RestoreSession("trip").has_value());
  auto t2 = c.Chat("trip", "And the way back?", o, nullptr);
  ASSERT_TRUE(t2.has_value()) << t2.error().ToString();
  EXPECT_EQ(t2->text, reference) << "the conversation continues exactly";
  fs::remove_all(dir);
}

// The guard cascade with a hybrid speaker: the speaker's hidden answer, then the verdict of a
// guard held to its answer by a grammar (tests/support/daemon_harness.h, ForcedGuardArgs).
TEST(HybridGuard, AnUnsafeVerdictRefusesTheHybridSpeakersAnswer) {
  auto args = ForcedGuardArgs("Safety: Unsafe\\nCategories: Violent");
  DaemonProcess d(args, Qwen35TinyPath());
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket(), std::chrono::seconds(120));  // two generations: a liveness bound
  std::string shown;
  auto refused = c.GenerateStream("Tell me a secret.", WithSystem(6), [&](std::string_view t) {
    shown += t;
    return true;
  });
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().server_code, static_cast<uint32_t>(proto::ErrorCode::kRefused));
  EXPECT_TRUE(shown.empty()) << "nothing is shown before the verdict";
}

// Both models hybrid: the guard's own prompt goes through its checkpoints too. The guarded
// answer is the unguarded one, and a second guarded request reuses the speaker's prefix.
TEST(HybridGuard, ASafeVerdictPassesTheAnswerUnchangedWithAHybridGuard) {
  DaemonProcess d({"--models", "guard=" + Qwen35TinyPath(), "--guard-model", "guard", "--guard-grammar",
                   "root ::= \"Safety: Safe\""},
                  Qwen35TinyPath());
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket(), std::chrono::seconds(120));
  GenerateOptions o = WithSystem(6);
  auto guarded = c.GenerateStream("Tell me about the sea.", o, nullptr);
  ASSERT_TRUE(guarded.has_value()) << guarded.error().ToString();
  EXPECT_GT(guarded->guard_ms, 0.0f);
  auto again = c.GenerateStream("Tell me about rivers.", o, nullptr);
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_GT(again->cached_tokens, 0u) << "the system prompt is reused under the cascade";
  o.guard = false;
  auto plain = c.GenerateStream("Tell me about the sea.", o, nullptr);
  ASSERT_TRUE(plain.has_value()) << plain.error().ToString();
  EXPECT_EQ(plain->text, guarded->text) << "the cascade does not change the answer";
  EXPECT_EQ(plain->guard_ms, 0.0f);
}

TEST(HybridMetrics, CheckpointCountersAppearOnTheMetricsPage) {
  DaemonProcess d({"--parallel", "2"}, Qwen35TinyPath());
  ASSERT_TRUE(d.ready()) << d.log();
  LlmClient c(d.socket());
  ASSERT_TRUE(c.GenerateStream("First question?", WithSystem(4), nullptr).has_value());
  auto g = c.GenerateStream("Second question?", WithSystem(4), nullptr);
  ASSERT_TRUE(g.has_value());
  std::string page;
  const std::string cmd = "curl -s --unix-socket " + d.dir() + "/http.sock http://localhost/metrics";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) page.append(buf, n);
  ::pclose(p);
  EXPECT_NE(page.find("llmd_checkpoint_hits_total{model=\"qwen35-tiny-q8_0\"} "), std::string::npos) << page;
  EXPECT_EQ(page.find("llmd_checkpoints{model=\"qwen35-tiny-q8_0\"} 0\n"), std::string::npos) << "checkpoints were kept";
}

}  // namespace
}  // namespace llmd::testing
