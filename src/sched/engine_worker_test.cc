// The scheduler over the fake engine: structure (steps, the engine's batch log, cache counters),
// never wall-clock time. The clock is a ManualClock; the only timeouts are liveness bounds.
#include "sched/engine_worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include "engine/fake_engine.h"
#include "engine/prompt_kernels.h"
#include "sched/prefill_cuts.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): the rig is this file's vocabulary

// --- The fake engine itself.

TEST(FakeEngine, RejectsAnInconsistentPositionWithoutChangingAnySequence) {
  FakeEngine fake;
  ASSERT_TRUE(fake.DecodeBatch({{0, 0, 20, false}, {1, 0, 21, true}}).ok());
  const Status st = fake.DecodeBatch({{0, 1, 22, false}, {1, 5, 23, true}});
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("inconsistent sequence positions"), std::string::npos);
  EXPECT_EQ(fake.history(0), (std::vector<TokenId>{20}));
  EXPECT_EQ(fake.history(1), (std::vector<TokenId>{21}));
}

TEST(FakeEngine, RecurrentMemoryCutsOnlyAtZeroOrItsEnd) {
  FakeEngine fake({.memory = FakeMemory::kRecurrent});
  ASSERT_TRUE(fake.DecodeBatch({{0, 0, 20, false}, {0, 1, 21, false}, {0, 2, 22, true}}).ok());
  EXPECT_EQ(fake.TruncateSequence(0, 1).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(fake.history(0).size(), 3u);
  auto state = fake.SaveSequenceState(0);
  ASSERT_TRUE(state.has_value());
  EXPECT_TRUE(fake.TruncateSequence(0, 3).ok());
  EXPECT_TRUE(fake.TruncateSequence(0, 0).ok());
  EXPECT_TRUE(fake.history(0).empty());
  ASSERT_TRUE(fake.RestoreSequenceState(1, *state).ok());
  EXPECT_EQ(fake.history(1), (std::vector<TokenId>{20, 21, 22}));
}

TEST(FakeEngine, SamplesFromTheSequenceOfTheOutputIndex) {
  FakeEngine fake;
  auto sampler = fake.NewSampler(engine::SamplingParams::Greedy(), {});
  ASSERT_TRUE(sampler.has_value());
  ASSERT_TRUE(fake.DecodeBatch({{0, 0, 20, true}, {1, 0, 30, false}, {1, 1, 31, true}}).ok());
  EXPECT_EQ((*sampler)->Sample({.index = 0}), FakeEngine::NextToken({20}));
  EXPECT_EQ((*sampler)->Sample({.index = 2}), FakeEngine::NextToken({30, 31}));
}

TEST(FakeEngine, RendersChatPromptsWithMessageStartTokens) {
  FakeEngine fake;
  std::vector<TokenId> expected{1};
  for (TokenId t : FakeEngine::Bytes("system\nS")) expected.push_back(t);
  expected.push_back(1);
  for (TokenId t : FakeEngine::Bytes("user\nU")) expected.push_back(t);
  expected.push_back(1);
  for (TokenId t : FakeEngine::Bytes("assistant\n")) expected.push_back(t);
  EXPECT_EQ(fake.ChatPrompt("S", "U", true).value(), expected);
  EXPECT_EQ(fake.ConversationPrompt({{"system", "S"}, {"user", "U"}}, {}, true).value().prompt, expected);
  EXPECT_EQ(fake.ConversationPrompt({{"tool", "x"}}, {}, true).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fake.CompletionPrompt("\xff").error().code(), StatusCode::kInvalidArgument);
}

// --- The scheduler.

TEST(EngineWorker, ConcurrentJobsOverlapAndEachProducesItsSoloTokens) {
  const std::vector<std::string> prompts = {"one", "second prompt", "the third of them", "and a fourth, longer one"};
  Rig rig;
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  channels.push_back(rig.Submit(Raw(prompts[0], 12)));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the first job's prefill step
  for (size_t i = 1; i < prompts.size(); ++i) channels.push_back(rig.Submit(Raw(prompts[i], 12)));
  rig.Release();

  for (size_t i = 0; i < prompts.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Raw(prompts[i], 12))) << prompts[i];
    EXPECT_EQ(done->stats.generated_tokens, 12);
    EXPECT_EQ(done->stats.finish_reason, FinishReason::kLength);
  }
  const Batches batches = rig.fake->batches();
  EXPECT_TRUE(std::any_of(batches.begin(), batches.end(), [](const auto& b) { return SequencesIn(b).size() == 4; }));
  EXPECT_EQ(rig.worker->stats().steps, batches.size());
  EXPECT_EQ(rig.worker->stats().requests, 4u);
}

TEST(EngineWorker, ARequestSharingALongSystemPromptReusesItAndDecodesOnlyTheRest) {
  const std::string system(100, 's');
  Rig rig;
  ASSERT_TRUE(rig.Run(Chat(system, "first question", 8)).has_value());
  ASSERT_TRUE(rig.Run(Raw("something unrelated", 8)).has_value());
  const int64_t decoded_before = rig.fake->prompt_tokens_decoded();
  const size_t batches_before = rig.fake->batches().size();

  auto done = rig.Run(Chat(system, "second question", 8));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  const auto prompt = ChatTokens(system, "second question");
  const size_t shared = CommonPrefix(ChatTokens(system, "first question"), prompt);
  ASSERT_GT(shared, system.size());
  EXPECT_EQ(done->stats.cached_tokens, static_cast<int32_t>(shared));
  EXPECT_EQ(rig.fake->prompt_tokens_decoded() - decoded_before, static_cast<int64_t>(prompt.size() - shared));
  EXPECT_EQ(rig.fake->batches()[batches_before].front().position, static_cast<int32_t>(shared));
  EXPECT_EQ(done->tokens, Solo(Chat(system, "second question", 8)));
}

TEST(EngineWorker, WithoutSequenceCopiesARequestLandsOnTheSlotHoldingItsPrefix) {
  const std::string system(100, 's');
  const FakeEngineOptions no_copies{.sequence_copy = false};
  Rig rig(no_copies);
  ASSERT_TRUE(rig.Run(Chat(system, "first question", 8)).has_value());
  // Every other slot is used after it, so the slot holding the system prompt is the least
  // recently used one only by accident of the order: the choice must be by prefix.
  ASSERT_TRUE(rig.Run(Raw("other text one", 8)).has_value());
  ASSERT_TRUE(rig.Run(Raw("other text number two", 8)).has_value());
  ASSERT_TRUE(rig.Run(Raw("other text number three!", 8)).has_value());

  auto done = rig.Run(Chat(system, "second question, longer", 8));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  const auto first = ChatTokens(system, "first question");
  const auto second = ChatTokens(system, "second question, longer");
  const Batches batches = rig.fake->batches();
  EXPECT_EQ(SequenceOf(batches, second), SequenceOf(batches, first));
  EXPECT_EQ(done->stats.cached_tokens, static_cast<int32_t>(CommonPrefix(first, second)));
  EXPECT_EQ(rig.worker->stats().prefix_copies, 0u);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
  EXPECT_EQ(done->tokens, Solo(Chat(system, "second question, longer", 8), no_copies));
}

// A 50-token prompt submitted while another job generates 40 tokens, 8 tokens a step: both
// give their solo tokens; `batches` gets the engine's calls and `b` the prompt's stats.
std::string LongPrompt() { return std::string(50, 'x'); }
void LongPromptBesideARunningDecode(const FakeEngineOptions& options, Batches* batches, engine::Completion* b) {
  Rig rig(options, TestOptions(/*batch_tokens=*/8));
  rig.fake->HoldDecodes();
  auto running = rig.Submit(Raw("go", 40));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto prefilling = rig.Submit(Raw(LongPrompt(), 4));
  rig.Release();
  auto done_a = Await(*running);
  auto done_b = Await(*prefilling);
  ASSERT_TRUE(done_a.has_value()) << done_a.error().ToString();
  ASSERT_TRUE(done_b.has_value()) << done_b.error().ToString();
  EXPECT_EQ(done_a->tokens, Solo(Raw("go", 40)));
  EXPECT_EQ(done_b->tokens, Solo(Raw(LongPrompt(), 4)));
  *batches = rig.fake->batches();
  *b = std::move(*done_b);
}

TEST(EngineWorker, ALongPromptIsPrefilledInChunksBesideARunningDecode) {
  const std::string long_prompt = LongPrompt();
  Batches batches;
  engine::Completion b;
  LongPromptBesideARunningDecode({}, &batches, &b);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const int32_t seq_a = SequenceOf(batches, FakeEngine::Bytes("go"));
  const int32_t seq_b = SequenceOf(batches, FakeEngine::Bytes(long_prompt));
  ASSERT_GE(seq_a, 0);
  ASSERT_GE(seq_b, 0);
  ASSERT_NE(seq_a, seq_b);
  size_t prefill_steps = 0;
  for (const auto& batch : batches) {
    EXPECT_LE(batch.size(), 8u);
    const bool prefills_b = std::any_of(batch.begin(), batch.end(), [&](const DecodeItem& i) {
      return i.sequence == seq_b && i.position < static_cast<int32_t>(long_prompt.size());
    });
    if (!prefills_b) continue;
    ++prefill_steps;
    EXPECT_EQ(ItemsOf(batch, seq_a), 1u) << "the running job gets exactly one token in every prefill step";
  }
  EXPECT_GE(prefill_steps, long_prompt.size() / 7);  // 7 prompt tokens beside 1 decode token
  EXPECT_EQ(b.stats.first_token_step - b.stats.prefill_step + 1, prefill_steps);
}

TEST(EngineWorker, WherePromptCallsAreApartEachIsOneSequencesPromptWithinOnePiece) {
  Batches batches;
  engine::Completion b;
  LongPromptBesideARunningDecode({.prompt_call_tokens = 16, .prompt_calls_apart = true}, &batches, &b);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  size_t prompt_calls = 0, generation_calls = 0;
  for (const auto& batch : batches) {
    const auto prompt = std::count_if(batch.begin(), batch.end(), [](const DecodeItem& i) { return i.prompt_tokens > 0; });
    EXPECT_TRUE(prompt == 0 || prompt == static_cast<ptrdiff_t>(batch.size())) << "a call mixes prompt and generated tokens";
    if (prompt == 0) {
      ++generation_calls;
      continue;
    }
    ++prompt_calls;
    EXPECT_EQ(batch.front().sequence, batch.back().sequence);
    EXPECT_EQ(batch.front().position / 16, batch.back().position / 16) << "a prompt call crosses a 16-token piece";
  }
  EXPECT_GE(prompt_calls, LongPrompt().size() / 7);  // 7 prompt tokens a step beside the running job's token
  EXPECT_GE(generation_calls, 39u);  // the running job's 40 tokens, its first from its prompt call
}

TEST(EngineWorker, JobsOfABurstAfterABusyPeriodStartTheirPrefillInTheSameStep) {
  WorkerOptions options = TestOptions();
  options.admission_window_ms = 10;  // the ManualClock never moves: it ends when the slots are full
  Rig rig({}, options);
  // A busy period that served two jobs at once.
  rig.fake->HoldDecodes();
  auto first = rig.Submit(Raw("busy one", 8));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto second = rig.Submit(Raw("busy two!", 8));
  rig.Release();
  ASSERT_TRUE(Await(*first).has_value());
  ASSERT_TRUE(Await(*second).has_value());

  std::vector<std::shared_ptr<JobChannel>> burst;
  for (const char* p : {"burst a", "burst bb", "burst ccc", "burst dddd"}) burst.push_back(rig.Submit(Raw(p, 6)));
  std::set<uint64_t> prefill_steps;
  for (auto& channel : burst) {
    auto done = Await(*channel);
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    prefill_steps.insert(done->stats.prefill_step);
  }
  EXPECT_EQ(prefill_steps.size(), 1u);
}

TEST(EngineWorker, ALoneClientNeverWaitsForABurst) {
  WorkerOptions options = TestOptions();
  options.admission_window_ms = 10;  // would never end with this clock, were it applied
  Rig rig({}, options);
  for (const char* p : {"alone", "alone again", "and again"}) {
    auto done = rig.Run(Raw(p, 4));
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
  }
}

TEST(EngineWorker, ACancelledJobEndsWithinOneStep) {
  Rig rig;
  rig.fake->HoldDecodes();
  auto cancelled = rig.Submit(Raw("cancel me", 1000));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // step 1: its prefill
  auto other = rig.Submit(Raw("keep going", 20));
  ASSERT_TRUE(rig.Step());  // step 2: its first token fed back, the other's prefill
  ASSERT_TRUE(rig.Step());  // step 3: both generating
  const size_t held = rig.fake->batches().size();  // the index the held step will have
  cancelled->Cancel();
  rig.Release();

  auto a = Await(*cancelled);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->stats.finish_reason, FinishReason::kCancelled);
  auto b = Await(*other);
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  EXPECT_EQ(b->tokens, Solo(Raw("keep going", 20)));

  const Batches batches = rig.fake->batches();
  const int32_t seq = SequenceOf(batches, FakeEngine::Bytes("cancel me"));
  ASSERT_GE(seq, 0);
  ASSERT_GT(batches.size(), held + 1);
  EXPECT_EQ(ItemsOf(batches[held], seq), 1u);  // the step the cancel arrived during
  for (size_t i = held + 1; i < batches.size(); ++i) EXPECT_EQ(ItemsOf(batches[i], seq), 0u) << "batch " << i;
}

TEST(EngineWorker, AFullQueueRefusesASubmissionWithQueueFull) {
  WorkerOptions options = TestOptions();
  options.queue_depth = 1;
  Rig rig({.sequences = 1}, options);
  rig.fake->HoldDecodes();
  auto running = rig.Submit(Raw("running", 4));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto queued = rig.Submit(Raw("queued", 4));
  Job refused = Raw("refused", 4);
  auto refused_channel = refused.channel;
  const Status st = rig.worker->Submit(std::move(refused));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.reason(), ErrorReason::kQueueFull);
  rig.Release();
  EXPECT_TRUE(Await(*running).has_value());
  EXPECT_TRUE(Await(*queued).has_value());
  EXPECT_FALSE(refused_channel->TryPop().has_value());
}

TEST(EngineWorker, AnEngineThatKeepsFailingFailsTheRequestsOfItsStepAndThenServesTheNext) {
  Rig rig;
  rig.fake->HoldDecodes();
  auto a = rig.Submit(Raw("first job", 10));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto b = rig.Submit(Raw("second job!", 10));
  ASSERT_TRUE(rig.Step());          // held: a's first token and b's prefill
  rig.fake->FailNextDecodes(3);     // the step, then each sequence's retry
  rig.Release();
  EXPECT_FALSE(Await(*a).has_value());
  EXPECT_FALSE(Await(*b).has_value());
  auto next = rig.Run(Raw("first job", 10));  // lands on a cleared sequence
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(next->tokens, Solo(Raw("first job", 10)));
}

TEST(EngineWorker, ZeroMaxTokensEndsAtOnceWithLength) {
  Rig rig;
  auto done = rig.Run(Raw("nothing to say", 0));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.generated_tokens, 0);
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kLength);
  EXPECT_TRUE(rig.fake->batches().empty());
}

// --- Recurrent memory: prefixes come back through state checkpoints.

const FakeEngineOptions kRecurrent{.memory = FakeMemory::kRecurrent};

TEST(EngineWorker, OnRecurrentMemoryASharedSystemPromptIsReusedThroughCheckpoints) {
  const std::string system = "You are a terse assistant. Answer in one word, never more.";
  Rig rig(kRecurrent);
  // Sequentially.
  for (const char* q : {"Capital of France?", "Colour of the sky?"}) {
    auto done = rig.Run(Chat(system, q, 6));
    ASSERT_TRUE(done.has_value()) << q << ": " << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Chat(system, q, 6), kRecurrent)) << q;
  }
  // Four at once.
  const std::vector<std::string> questions = {"Two plus two?", "Largest ocean?", "Fastest land animal?", "Opposite of up?"};
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  channels.push_back(rig.Submit(Chat(system, questions[0], 6)));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (size_t i = 1; i < questions.size(); ++i) channels.push_back(rig.Submit(Chat(system, questions[i], 6)));
  rig.Release();
  for (size_t i = 0; i < questions.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << questions[i] << ": " << done.error().ToString();
    EXPECT_GT(done->stats.cached_tokens, 0) << questions[i];
    EXPECT_EQ(done->tokens, Solo(Chat(system, questions[i], 6), kRecurrent)) << questions[i];
  }
  EXPECT_GT(rig.worker->stats().checkpoint_hits, 0u);
  EXPECT_EQ(rig.fake->refused_operations(), 0) << "the scheduler asked recurrent memory for a partial cut";
}

// A finished job's recurrent state serves no later prompt (those restore checkpoints), and a
// sequence once used keeps its state resident: one job at a time keeps to the sequence used
// last, where cuttable memory goes round the free sequences, keeping each prompt cached longest.
TEST(EngineWorker, OnRecurrentMemoryOneJobAtATimeKeepsToTheSequenceUsedLast) {
  for (const FakeEngineOptions& memory : {kRecurrent, FakeEngineOptions{}}) {
    const bool recurrent = memory.memory == FakeMemory::kRecurrent;
    Rig rig(memory);
    std::set<int32_t> used;
    for (const char* prompt : {"first prompt", "the second prompt", "and the third prompt", "one more, the last"}) {
      auto done = rig.Run(Raw(prompt, 3));
      ASSERT_TRUE(done.has_value()) << prompt << ": " << done.error().ToString();
      used.insert(SequenceOf(rig.fake->batches(), FakeEngine::Bytes(prompt)));
    }
    EXPECT_EQ(used.size(), recurrent ? 1u : 4u) << (recurrent ? "recurrent" : "cuttable") << " memory";
    EXPECT_FALSE(used.contains(-1));
  }
}

TEST(EngineWorker, OnRecurrentMemoryResentDivergingAndPrefixPromptsMatchTheirSoloOutputs) {
  const std::string system = "You are a careful assistant who checks every answer twice.";
  std::string diverged = system;
  diverged[20] = 'X';  // differs inside the system prompt
  Rig rig(kRecurrent);
  ASSERT_TRUE(rig.Run(Chat(system, "What is the time?", 6)).has_value());

  auto resent = rig.Run(Chat(system, "What is the time?", 6));
  ASSERT_TRUE(resent.has_value()) << resent.error().ToString();
  // Restored from the checkpoint before the last prompt token, a cut of its cold prefill too.
  const auto prompt = ChatTokens(system, "What is the time?");
  EXPECT_EQ(resent->stats.cached_tokens, static_cast<int32_t>(prompt.size() - 1));
  EXPECT_EQ(resent->tokens, Solo(Chat(system, "What is the time?", 6), kRecurrent));

  auto other = rig.Run(Chat(diverged, "What is the time?", 6));
  ASSERT_TRUE(other.has_value()) << other.error().ToString();
  EXPECT_EQ(other->tokens, Solo(Chat(diverged, "What is the time?", 6), kRecurrent));

  const std::string text = "the quick brown fox jumps over the lazy dog";
  ASSERT_TRUE(rig.Run(Raw(text, 6)).has_value());
  auto prefix = rig.Run(Raw(text.substr(0, 19), 6));
  ASSERT_TRUE(prefix.has_value()) << prefix.error().ToString();
  EXPECT_EQ(prefix->tokens, Solo(Raw(text.substr(0, 19), 6), kRecurrent));

  EXPECT_GT(rig.worker->stats().checkpoint_hits, 0u);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

TEST(EngineWorker, OnRecurrentMemoryASessionContinuesAfterAOneShotRequestOnItsSlot) {
  const std::string system = "You remember everything the user tells you.";
  FakeEngineOptions one_slot = kRecurrent;
  one_slot.sequences = 1;
  Rig rig(one_slot);
  ASSERT_TRUE(rig.Run(Turn("s", system, "My name is Ada.", 6)).has_value());
  ASSERT_TRUE(rig.Run(Chat(system, "Unrelated question?", 6)).has_value());
  auto turn2 = rig.Run(Turn("s", system, "What is my name?", 6));
  ASSERT_TRUE(turn2.has_value()) << turn2.error().ToString();
  // The one-shot request replaced the session's memory; the system message comes back from
  // its checkpoint (the recurrent state cannot be cut back to it).
  const size_t system_message = 1 + std::string("system\n").size() + system.size();
  EXPECT_EQ(turn2->stats.cached_tokens, static_cast<int32_t>(system_message));

  Rig solo(one_slot);
  ASSERT_TRUE(solo.Run(Turn("s", system, "My name is Ada.", 6)).has_value());
  auto expected = solo.Run(Turn("s", system, "What is my name?", 6));
  ASSERT_TRUE(expected.has_value());
  EXPECT_EQ(turn2->tokens, expected->tokens);
  EXPECT_GT(rig.worker->stats().checkpoint_hits, 0u);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

// --- Shared-prefix dedup: a burst with one system prompt prefills it once.

// Tests that hold for attention and recurrent memory alike.
class EitherMemory : public ::testing::TestWithParam<FakeMemory> {
 protected:
  // The prefix of `a` that a job prefilling `b` beside it can take instead of computing it:
  // all they share on attention memory; on recurrent memory, up to the last prefill cut they
  // share (PrefillCuts, with the worker's batch_tokens as the piece).
  size_t Shared(const std::vector<TokenId>& a, const std::vector<TokenId>& b, size_t batch_tokens) const {
    const size_t common = std::min(CommonPrefix(a, b), std::min(a.size(), b.size()) - 1);
    if (GetParam() == FakeMemory::kAttention) return common;
    const auto ca = PrefillCuts(a, FakeEngine::kMessageStart, batch_tokens);
    const auto cb = PrefillCuts(b, FakeEngine::kMessageStart, batch_tokens);
    size_t shared = 0;
    for (size_t i = 0; i < ca.size() && i < cb.size() && ca[i] == cb[i] && ca[i] <= common; ++i) shared = ca[i];
    return shared;
  }
};

TEST_P(EitherMemory, JobsAdmittedTogetherPrefillTheirSharedSystemPromptOnce) {
  const FakeEngineOptions engine_options{.sequences = 5, .memory = GetParam()};
  const std::string system(200 - 8, 'p');  // 200 tokens with "[1]system\n"
  const std::vector<std::string> questions = {"Alpha?", "Bravo, please?", "Charlie and more?", "Delta, the last one?"};
  Rig rig(engine_options, TestOptions(/*batch_tokens=*/64));
  // A blocker holds the engine while the four queue, so they are admitted together.
  rig.fake->HoldDecodes();
  auto blocker = rig.Submit(Raw("x", 1));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (const auto& q : questions) channels.push_back(rig.Submit(Chat(system, q, 5)));
  rig.Release();
  ASSERT_TRUE(Await(*blocker).has_value());

  const size_t shared = Shared(ChatTokens(system, questions[0]), ChatTokens(system, questions[1]), 64);
  size_t tails = 0;
  for (const auto& q : questions) tails += ChatTokens(system, q).size() - shared;
  for (size_t i = 0; i < questions.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << questions[i] << ": " << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Chat(system, questions[i], 5), engine_options, TestOptions(64))) << questions[i];
  }
  const int64_t decoded = rig.fake->prompt_tokens_decoded() - 1;  // less the blocker's
  EXPECT_GE(decoded, static_cast<int64_t>(shared + tails));
  EXPECT_LT(decoded, static_cast<int64_t>(2 * shared + tails));
  EXPECT_EQ(decoded, static_cast<int64_t>(shared + tails)) << "in fact every shared token once";
  EXPECT_GE(rig.worker->stats().prefix_copies, 3u);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

TEST_P(EitherMemory, JobsArrivingDuringItsPrefillCopyWhatIsThereAndWaitForTheRest) {
  const FakeEngineOptions engine_options{.sequences = 4, .memory = GetParam()};
  const std::string system(200 - 8, 'p');
  const std::vector<std::string> questions = {"Alpha?", "Bravo, please?", "Charlie and more?", "Delta, the last one?"};
  Rig rig(engine_options, TestOptions(/*batch_tokens=*/64));
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  channels.push_back(rig.Submit(Chat(system, questions[0], 5)));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // its first prompt chunk
  for (size_t i = 1; i < questions.size(); ++i) channels.push_back(rig.Submit(Chat(system, questions[i], 5)));
  rig.Release();

  const size_t shared = Shared(ChatTokens(system, questions[0]), ChatTokens(system, questions[1]), 64);
  size_t tails = 0;
  for (const auto& q : questions) tails += ChatTokens(system, q).size() - shared;
  for (size_t i = 0; i < questions.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << questions[i] << ": " << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Chat(system, questions[i], 5), engine_options, TestOptions(64))) << questions[i];
  }
  EXPECT_LT(rig.fake->prompt_tokens_decoded(), static_cast<int64_t>(2 * shared + tails));
  EXPECT_EQ(rig.fake->prompt_tokens_decoded(), static_cast<int64_t>(shared + tails));
  EXPECT_GE(rig.worker->stats().prefix_copies, 3u);
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

TEST_P(EitherMemory, WaitingJobsStillShareThePrefixWhenTheJobTheyWaitForIsCancelled) {
  const FakeEngineOptions engine_options{.sequences = 5, .memory = GetParam()};
  const std::string system(200 - 8, 'p');
  const std::vector<std::string> questions = {"Alpha?", "Bravo, please?", "Charlie and more?", "Delta, the last one?"};
  Rig rig(engine_options, TestOptions(/*batch_tokens=*/64));
  rig.fake->HoldDecodes();
  auto blocker = rig.Submit(Raw("x", 1));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (const auto& q : questions) channels.push_back(rig.Submit(Chat(system, q, 5)));
  ASSERT_TRUE(rig.Step());  // the first job's first prompt chunk; the others wait for it
  channels[0]->Cancel();
  rig.Release();
  ASSERT_TRUE(Await(*blocker).has_value());

  auto cancelled = Await(*channels[0]);
  ASSERT_TRUE(cancelled.has_value()) << cancelled.error().ToString();
  EXPECT_EQ(cancelled->stats.finish_reason, FinishReason::kCancelled);
  const size_t shared = Shared(ChatTokens(system, questions[0]), ChatTokens(system, questions[1]), 64);
  size_t tails = 0;
  for (size_t i = 1; i < questions.size(); ++i) {
    tails += ChatTokens(system, questions[i]).size() - shared;
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << questions[i] << ": " << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Chat(system, questions[i], 5), engine_options, TestOptions(64))) << questions[i];
  }
  // The three left prefill the shared prompt once between them, not once each.
  EXPECT_LT(rig.fake->prompt_tokens_decoded() - 1, static_cast<int64_t>(2 * shared + tails));
  EXPECT_EQ(rig.fake->prompt_tokens_decoded() - 1, static_cast<int64_t>(shared + tails));
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

// A greedy chat of 6 tokens.
Job GreedyConversation(std::vector<chat::Message> messages) {
  Job job;
  job.prompt = Conversation{std::move(messages), {}};
  job.options.max_tokens = 6;
  job.options.sampling = engine::SamplingParams::Greedy();
  return job;
}

TEST_P(EitherMemory, AConversationSentAgainWithItsReplyReusesTheWholeHistory) {
  const FakeEngineOptions engine_options{.memory = GetParam()};
  const std::vector<chat::Message> first = {{"system", "Be brief."}, {"user", "Name a colour."}};
  Rig rig(engine_options);
  auto reply = rig.Run(GreedyConversation(first));
  ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
  std::vector<chat::Message> second = first;
  second.push_back({"assistant", reply->text});
  second.push_back({"user", "Another one."});
  auto done = rig.Run(GreedyConversation(second));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  // Attention: all but the reply's last token, which was sampled but never fed back.
  // Recurrent: the first prompt's generation prompt, from the checkpoint at its start: the
  // reply was decoded a token at a time, which a cold prefill of it is not.
  const size_t first_prompt = FakeEngine().ConversationPrompt(first, {}, true).value().prompt.size();
  const size_t reply_start = first_prompt - std::string("assistant\n").size() - 1;
  EXPECT_EQ(done->stats.cached_tokens, static_cast<int32_t>(GetParam() == FakeMemory::kAttention
                                                                 ? first_prompt + reply->tokens.size() - 1
                                                                 : reply_start));
  EXPECT_EQ(done->tokens, Solo(GreedyConversation(second), engine_options));
  EXPECT_EQ(rig.fake->refused_operations(), 0);
}

// Where a prompt token's arithmetic follows the micro-batch of its cold prefill
// (MemoryCapabilities::prompt_call_tokens): the reply was decoded as generation steps and is
// prefilled again, and the first prompt's rows are reused only as far as the second prompt's
// cold prefill computes them with the same kernels (engine/prompt_kernels.h).
TEST(EngineWorker, WherePromptRowsFollowTheirColdKernelsAReplyIsPrefilledAgain) {
  // 64 tokens or more, so that whole pieces are tiled in both prompts (a shorter prompt is
  // computed row by row: engine::ColdKernel).
  const std::vector<chat::Message> first = {{"system", "Be brief, and answer in words a child would know."},
                                            {"user", "Name a colour."}};
  for (const int32_t piece : {16, 512}) {
    const FakeEngineOptions engine_options{.prompt_call_tokens = piece};
    Rig rig(engine_options);
    auto reply = rig.Run(GreedyConversation(first));
    ASSERT_TRUE(reply.has_value()) << reply.error().ToString();
    std::vector<chat::Message> second = first;
    second.push_back({"assistant", reply->text});
    second.push_back({"user", "Another one, and say why you chose it in a full sentence."});
    auto done = rig.Run(GreedyConversation(second));
    ASSERT_TRUE(done.has_value()) << done.error().ToString();
    const size_t first_prompt = FakeEngine().ConversationPrompt(first, {}, true).value().prompt.size();
    const size_t second_prompt = FakeEngine().ConversationPrompt(second, {}, true).value().prompt.size();
    ASSERT_GE(first_prompt, static_cast<size_t>(engine::kTiledKernelRows));
    EXPECT_EQ(done->stats.cached_tokens,
              static_cast<int32_t>(engine::SameKernelPrefix(first_prompt, first_prompt, second_prompt, piece)))
        << "piece " << piece;
    EXPECT_LE(done->stats.cached_tokens, static_cast<int32_t>(first_prompt));
    if (piece == 16) {
      EXPECT_GT(done->stats.cached_tokens, 0) << "whole 16-token pieces are alike";
    }
    EXPECT_EQ(done->tokens, Solo(GreedyConversation(second), engine_options));
  }
}

TEST_P(EitherMemory, AFailingDecodeFailsOnlyItsOwnRequest) {
  const FakeEngineOptions poisoned{.memory = GetParam(), .poison_token = FakeEngine::ByteToken('~')};
  Rig rig(poisoned);
  rig.fake->HoldDecodes();
  auto a = rig.Submit(Raw("alpha job", 10));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto bad = rig.Submit(Raw("poisoned ~ job", 10));
  auto c = rig.Submit(Raw("gamma job, longer", 10));
  rig.Release();

  auto failed = Await(*bad);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), StatusCode::kInternal);
  auto done_a = Await(*a);
  auto done_c = Await(*c);
  ASSERT_TRUE(done_a.has_value()) << done_a.error().ToString();
  ASSERT_TRUE(done_c.has_value()) << done_c.error().ToString();
  EXPECT_EQ(done_a->tokens, Solo(Raw("alpha job", 10), poisoned));
  EXPECT_EQ(done_c->tokens, Solo(Raw("gamma job, longer", 10), poisoned));
  const Batches failed_batches = rig.fake->failed_batches();
  if (GetParam() == FakeMemory::kAttention) {
    EXPECT_TRUE(std::any_of(failed_batches.begin(), failed_batches.end(),
                            [](const auto& b) { return SequencesIn(b).size() == 3; }))
        << "the poisoned prompt shared a step with both other jobs";
  } else {
    // Each prompt chunk is a decode call of its own (ShapeStableCalls): only the poisoned
    // job's calls fail.
    ASSERT_FALSE(failed_batches.empty());
    for (const auto& b : failed_batches) EXPECT_EQ(SequencesIn(b).size(), 1u);
  }
}

TEST_P(EitherMemory, AStepThatFailsOnceIsRetriedPerSequence) {
  const FakeEngineOptions engine_options{.memory = GetParam()};
  Rig rig(engine_options);
  rig.fake->HoldDecodes();
  auto a = rig.Submit(Chat("system", "first job", 10));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto b = rig.Submit(Chat("system", "second job!", 10));
  ASSERT_TRUE(rig.Step());
  ASSERT_TRUE(rig.Step());  // both jobs in the held step
  rig.fake->FailNextDecodes(1);
  rig.Release();
  auto done_a = Await(*a);
  auto done_b = Await(*b);
  ASSERT_TRUE(done_a.has_value()) << done_a.error().ToString();
  ASSERT_TRUE(done_b.has_value()) << done_b.error().ToString();
  EXPECT_EQ(done_a->tokens, Solo(Chat("system", "first job", 10), engine_options));
  EXPECT_EQ(done_b->tokens, Solo(Chat("system", "second job!", 10), engine_options));
  ASSERT_EQ(rig.fake->failed_batches().size(), 1u);
  // Recurrent memory: each prompt chunk is a decode call of its own, and the one that failed
  // is retried alone.
  EXPECT_EQ(SequencesIn(rig.fake->failed_batches()[0]).size(), GetParam() == FakeMemory::kAttention ? 2u : 1u);
}

INSTANTIATE_TEST_SUITE_P(EngineWorker, EitherMemory, ::testing::Values(FakeMemory::kAttention, FakeMemory::kRecurrent),
                         [](const auto& info) {
                           return info.param == FakeMemory::kRecurrent ? std::string("Recurrent")
                                                                       : std::string("Attention");
                         });

// --- Lifecycle.

TEST(EngineWorker, StoppingCancelsTheRunningJobAndFailsTheQueuedOnes) {
  Rig rig({.sequences = 1});
  rig.fake->HoldDecodes();
  auto running = rig.Submit(Raw("running", 1000));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto queued = rig.Submit(Raw("queued", 4));
  rig.worker->Stop();
  auto dropped = Await(*queued);
  ASSERT_FALSE(dropped.has_value());
  EXPECT_EQ(dropped.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(dropped.error().reason(), ErrorReason::kShuttingDown);
  const Status late = rig.worker->Submit(Raw("too late", 4));
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
  EXPECT_EQ(late.reason(), ErrorReason::kShuttingDown);
  rig.Release();
  auto done = Await(*running);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kCancelled);
}

TEST(EngineWorker, ASwappedInEngineServesTheNextJobFromAClearedCache) {
  Rig rig(kRecurrent);
  ASSERT_TRUE(rig.Run(Chat("system prompt", "question", 6)).has_value());
  ASSERT_GT(rig.worker->stats().checkpoints, 0u);
  auto next = std::make_unique<FakeEngine>();
  rig.fake = next.get();  // the old one is released at the swap
  rig.worker->SwapEngine(std::move(next));
  auto done = rig.Run(Chat("system prompt", "question", 6));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.cached_tokens, 0);
  EXPECT_EQ(done->tokens, Solo(Chat("system prompt", "question", 6)));
  EXPECT_EQ(rig.fake->prompt_tokens_decoded(), static_cast<int64_t>(ChatTokens("system prompt", "question").size()));
  EXPECT_EQ(rig.worker->stats().checkpoints, 0u);
  EXPECT_EQ(rig.worker->health().model_fingerprint, rig.fake->model_info().fingerprint);
}

TEST(EngineWorker, ASwappedInEngineWithFewerSequencesGetsThatManySlots) {
  Rig rig;  // 4 sequences
  ASSERT_TRUE(rig.Run(Raw("before the swap", 4)).has_value());
  auto next = std::make_unique<FakeEngine>(FakeEngineOptions{.sequences = 2});
  rig.fake = next.get();
  rig.worker->SwapEngine(std::move(next));
  const std::vector<std::string> prompts = {"one", "second prompt", "the third of them", "and a fourth, longer one"};
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (const auto& p : prompts) channels.push_back(rig.Submit(Raw(p, 6)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto done = Await(*channels[i]);
    ASSERT_TRUE(done.has_value()) << prompts[i] << ": " << done.error().ToString();
    EXPECT_EQ(done->tokens, Solo(Raw(prompts[i], 6))) << prompts[i];
  }
  for (const auto& batch : rig.fake->batches()) {
    for (const auto& item : batch) EXPECT_LT(item.sequence, 2);
  }
  EXPECT_TRUE(rig.fake->failed_batches().empty());
}

// --- Limits.

TEST(EngineWorker, APromptThatFillsTheContextIsRejectedAsTooLong) {
  Rig rig({.context_tokens = 64});
  auto too_long = rig.Run(Raw(std::string(64, 'a'), 4));
  ASSERT_FALSE(too_long.has_value());
  EXPECT_EQ(too_long.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_long.error().reason(), ErrorReason::kPromptTooLong);
  // One token shorter fits, with room for one generated token.
  auto fits = rig.Run(Raw(std::string(63, 'a'), 4));
  ASSERT_TRUE(fits.has_value()) << fits.error().ToString();
  EXPECT_EQ(fits->stats.generated_tokens, 1);
  EXPECT_EQ(fits->stats.finish_reason, FinishReason::kLength);
}

TEST(EngineWorker, TheEndOfGenerationTokenEndsAJobWithStop) {
  Rig rig({.end_after_generated = 3});
  auto done = rig.Run(Raw("short answer", 50));
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.generated_tokens, 3);
  EXPECT_EQ(done->tokens.size(), 3u);
  EXPECT_EQ(done->stats.finish_reason, FinishReason::kStop);
}

TEST(EngineWorker, StreamedTextIsTheCompletionText) {
  Rig rig;
  Job job = Raw("stream this", 9);
  job.stream = true;
  auto channel = rig.Submit(std::move(job));
  std::string streamed;
  Result<Completion> done = DeadlineExceededError("no final event");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLivenessMs);
  while (std::chrono::steady_clock::now() < deadline) {
    auto event = channel->TryPop();
    if (!event) {
      channel->Wait(100);
      continue;
    }
    if (event->type == JobEvent::Type::kText) streamed += event->text;
    if (event->type == JobEvent::Type::kDone) {
      done = std::move(event->completion);
      break;
    }
  }
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(streamed, done->text);
  EXPECT_EQ(done->text, FakeEngine().Detokenize(done->tokens, false).value());
  EXPECT_EQ(done->text.size(), 9u);
}


}  // namespace
}  // namespace llmd::sched
