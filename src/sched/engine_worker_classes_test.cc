// Request classes in the engine worker, on the fake engine, stated in steps: when an
// interactive job starts, which slots sit out, and that a paused job's tokens are those of
// its uninterrupted run.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): test helpers

// Three sequences, two of which run in a step: the third is for a higher class.
WorkerOptions NarrowOptions() {
  WorkerOptions options = TestOptions();
  options.decode_width = 2;
  return options;
}
const FakeEngineOptions kThreeSequences{.sequences = 3};

// The most sequences that decoded a token in one step (not counting a prompt computed beside
// them).
size_t MostDecodingInAStep(const Batches& batches) {
  size_t most = 0;
  for (const auto& batch : batches) most = std::max(most, DecodingIn(batch).size());
  return most;
}

// The index of the first batch holding `prompt`'s last token (its logits give the first
// generated token); batches.size() if none.
size_t BatchEndingPrompt(const Batches& batches, const std::vector<TokenId>& prompt) {
  for (size_t i = 0; i < batches.size(); ++i) {
    for (const auto& item : batches[i]) {
      if (item.logits && item.position + 1 == static_cast<int32_t>(prompt.size()) && item.token == prompt.back()) return i;
    }
  }
  return batches.size();
}

TEST(EngineWorkerClasses, AnInteractiveJobPrefillsInTheNextStepAndAPausedJobKeepsItsTokens) {
  Rig rig(kThreeSequences, NarrowOptions());
  const Job first = Classed(Raw("background work, the first", 30), RequestClass::kBackground);
  const Job second = Classed(Raw("background work number two", 30), RequestClass::kBackground);
  rig.fake->HoldDecodes();
  auto first_channel = rig.Submit(first);
  auto second_channel = rig.Submit(second);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(rig.Step());  // both generate now
  const uint64_t held_step = rig.worker->stats().steps;
  auto voice = rig.Submit(Classed(Raw("a person waits", 6), RequestClass::kInteractive));
  rig.Release();

  auto answer = Await(*voice);
  ASSERT_TRUE(answer.has_value()) << answer.error().ToString();
  EXPECT_EQ(answer->stats.prefill_step, held_step + 1);  // the very next step
  // That step held the interactive prompt and one background job: the width is two (while
  // interactive work runs, a prompt takes a place in it); after it, the voice and one
  // background job decoded.
  const Batches batches = rig.fake->batches();
  const size_t prompt_batch = BatchEndingPrompt(batches, FakeEngine::Bytes("a person waits"));
  ASSERT_LT(prompt_batch + 1, batches.size());
  EXPECT_EQ(SequencesIn(batches[prompt_batch]).size(), 2u);
  EXPECT_EQ(DecodingIn(batches[prompt_batch + 1]).size(), 2u);
  EXPECT_EQ(MostDecodingInAStep(batches), 2u);
  EXPECT_GE(rig.worker->stats().preemptions, 1u);

  auto first_done = Await(*first_channel);
  auto second_done = Await(*second_channel);
  ASSERT_TRUE(first_done.has_value() && second_done.has_value());
  EXPECT_EQ(first_done->tokens, Solo(Raw("background work, the first", 30)));
  EXPECT_EQ(second_done->tokens, Solo(Raw("background work number two", 30)));
  EXPECT_EQ(answer->tokens, Solo(Raw("a person waits", 6)));
}

TEST(EngineWorkerClasses, NormalJobsNeverTakeTheSequencesKeptForAHigherClass) {
  Rig rig(kThreeSequences, NarrowOptions());
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (const char* prompt : {"normal job one", "normal job two!", "normal job three?"}) {
    channels.push_back(rig.Submit(Raw(prompt, 8)));
  }
  rig.Release();
  for (auto& channel : channels) ASSERT_TRUE(Await(*channel).has_value());
  EXPECT_EQ(MostDecodingInAStep(rig.fake->batches()), 2u);
  EXPECT_EQ(rig.worker->stats().preemptions, 0u);
}

TEST(EngineWorkerClasses, AFullBackgroundQueueNeverRefusesAnInteractiveJob) {
  WorkerOptions options = TestOptions();
  options.queue_depth = 1;
  Rig rig({.sequences = 1}, options);
  rig.fake->HoldDecodes();
  auto running = rig.Submit(Classed(Raw("running background job", 4), RequestClass::kBackground));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto waiting = rig.Submit(Classed(Raw("waiting background job", 4), RequestClass::kBackground));
  const Status refused = rig.worker->Submit(Classed(Raw("one too many", 4), RequestClass::kBackground));
  EXPECT_EQ(refused.reason(), ErrorReason::kQueueFull);
  auto voice = rig.Submit(Classed(Raw("a person waits", 4), RequestClass::kInteractive));
  rig.Release();

  auto voice_done = Await(*voice);
  auto waiting_done = Await(*waiting);
  ASSERT_TRUE(voice_done.has_value() && waiting_done.has_value());
  ASSERT_TRUE(Await(*running).has_value());
  // The interactive job, queued last, went before the background job queued ahead of it.
  EXPECT_LT(voice_done->stats.prefill_step, waiting_done->stats.prefill_step);
}

TEST(EngineWorkerClasses, PeersTakeTurnsWithinAClass) {
  Rig rig({.sequences = 1}, TestOptions());
  rig.fake->HoldDecodes();
  auto blocker = rig.Submit(Classed(Raw("holds the only slot", 2), RequestClass::kNormal, 1));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  std::vector<std::pair<std::string, std::shared_ptr<JobChannel>>> jobs;
  for (const char* name : {"A one", "A two.", "A three"}) {
    jobs.emplace_back(name, rig.Submit(Classed(Raw(name, 2), RequestClass::kNormal, 1000)));
  }
  jobs.emplace_back("B one", rig.Submit(Classed(Raw("B one", 2), RequestClass::kNormal, 2000)));
  rig.Release();
  ASSERT_TRUE(Await(*blocker).has_value());
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& [name, channel] : jobs) {
    auto done = Await(*channel);
    ASSERT_TRUE(done.has_value());
    order.emplace_back(done->stats.prefill_step, name);
  }
  std::sort(order.begin(), order.end());
  std::vector<std::string> names;
  for (auto& [step, name] : order) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"A one", "B one", "A two.", "A three"}));
}

// Six sequences, four run in a step.
WorkerOptions FourWide() {
  WorkerOptions options = TestOptions();
  options.decode_width = 4;
  return options;
}
const FakeEngineOptions kSixSequences{.sequences = 6};

// Peer 1000 sends five normal requests of `max_tokens` on a held rig: four run, the fifth waits
// for one of them.
std::vector<std::shared_ptr<JobChannel>> HeavyPeer(Rig& rig, int32_t max_tokens) {
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> heavy;
  for (int i = 0; i < 5; ++i) {
    heavy.push_back(rig.Submit(Classed(Raw("heavy peer request " + std::string(static_cast<size_t>(i), '!'), max_tokens),
                                       RequestClass::kNormal, 1000)));
  }
  EXPECT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  return heavy;
}

// Submits `job` on a held rig and lets everything run: the job's prefill begins in the very
// next step (it waited for no heavy request to end), and its tokens are its solo run's.
void ExpectAdmittedAtOnce(Rig& rig, const Job& job) {
  const uint64_t held_step = rig.worker->stats().steps;
  auto channel = rig.Submit(job);
  rig.Release();
  auto done = Await(*channel);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->stats.prefill_step, held_step + 1) << "it waited for a heavy request to end";
  EXPECT_EQ(done->tokens, Solo(job));
}

TEST(EngineWorkerClasses, WithTwoSpareSequencesAPeerBehindAnothersManyRequestsRunsAtOnce) {
  Rig rig(kSixSequences, FourWide());
  std::vector<std::shared_ptr<JobChannel>> heavy = HeavyPeer(rig, 12);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rig.Step());
  ExpectAdmittedAtOnce(rig, Classed(Raw("the other peer", 4), RequestClass::kNormal, 2000));
  for (auto& channel : heavy) ASSERT_TRUE(Await(*channel).has_value());
  EXPECT_GE(rig.worker->stats().preemptions, 1u);  // the heavy peer's newest sat out for it
  EXPECT_EQ(MostDecodingInAStep(rig.fake->batches()), 4u);
}

// Four background requests of one peer (uid 1000), on sequences 0-3 in a held rig: the first
// generates `first_tokens`, the others `other_tokens`.
std::vector<std::shared_ptr<JobChannel>> FourBackground(Rig& rig, int32_t first_tokens, int32_t other_tokens) {
  std::vector<std::shared_ptr<JobChannel>> channels;
  for (int i = 0; i < 4; ++i) {
    channels.push_back(rig.Submit(Classed(Raw("running request " + std::string(static_cast<size_t>(i), '!'), i == 0 ? first_tokens : other_tokens),
                                          RequestClass::kBackground, 1000)));
  }
  return channels;
}

// With a sequence past the two kept free, a peer's fifth request has its prompt computed while
// its four decode, and decodes in the step after one of them ends: the width stays full.
TEST(EngineWorkerClasses, AJobPastTheWidthComputesItsPromptAheadAndDecodesWhenOneEnds) {
  Rig rig({.sequences = 7}, FourWide());
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> four = FourBackground(rig, 4, 12);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(rig.Step());  // the four decode
  const uint64_t held_step = rig.worker->stats().steps;
  const Job fifth = Classed(Raw("the fifth request, computed ahead", 6), RequestClass::kBackground, 1000);
  auto fifth_channel = rig.Submit(fifth);
  rig.Release();

  auto done = Await(*fifth_channel);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  for (auto& channel : four) ASSERT_TRUE(Await(*channel).has_value());
  EXPECT_EQ(done->stats.prefill_step, held_step + 1) << "it waited for a running request to end";
  EXPECT_EQ(done->stats.preemptions, 0) << "waiting for its first turn is no preemption";
  EXPECT_EQ(rig.worker->stats().preemptions, 0u);
  const Batches batches = rig.fake->batches();
  const int32_t sequence = SequenceOf(batches, FakeEngine::Bytes("the fifth request, computed ahead"));
  const auto first_decode = std::find_if(batches.begin(), batches.end(), [&](const std::vector<DecodeItem>& b) {
    return DecodingIn(b).count(sequence) > 0;
  });
  ASSERT_NE(first_decode, batches.end());
  // From the step that computed its prompt to the one it first decoded in, four decoded in each.
  for (auto b = batches.begin() + static_cast<ptrdiff_t>(done->stats.prefill_step - 1); b <= first_decode; ++b) {
    EXPECT_EQ(DecodingIn(*b).size(), 4u) << "step " << (b - batches.begin() + 1);
  }
  EXPECT_EQ(ItemsOf(*first_decode, sequence), 1u);  // its pending token only: no prompt left
  EXPECT_EQ(MostDecodingInAStep(batches), 4u);
  EXPECT_EQ(done->tokens, Solo(fifth));
}

// A job that finds the decode width full takes the sequence that keeps the decoders
// consecutive once the job with the fewest tokens left ends (llama.cpp computes each run of
// consecutive sequences as a micro-batch of its own): the busy ones are 1-4, the one on 4 ends
// first, so the new job takes 0, not 5 (beside 1-4 now, but beside 1-3 when it decodes).
TEST(EngineWorkerClasses, AJobPastTheWidthTakesTheSequenceThatKeepsTheDecodersConsecutiveWhenOneEnds) {
  Rig rig({.sequences = 7}, FourWide());
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels = FourBackground(rig, 2, 30);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 12 && rig.worker->stats().requests == 0; ++i) ASSERT_TRUE(rig.Step());
  ASSERT_EQ(rig.worker->stats().requests, 1u) << "the short request on sequence 0 did not end";
  const std::string short_next = "the next request, short";
  channels.push_back(rig.Submit(Classed(Raw(short_next, 6), RequestClass::kBackground, 1000)));
  for (int i = 0; i < 4 && SequenceOf(rig.fake->batches(), FakeEngine::Bytes(short_next)) < 0; ++i) ASSERT_TRUE(rig.Step());
  ASSERT_EQ(SequenceOf(rig.fake->batches(), FakeEngine::Bytes(short_next)), 4);
  const std::string ahead = "the request past the width, computed ahead";
  channels.push_back(rig.Submit(Classed(Raw(ahead, 6), RequestClass::kBackground, 1000)));
  rig.Release();
  for (auto& channel : channels) ASSERT_TRUE(Await(*channel).has_value());
  const Batches batches = rig.fake->batches();
  EXPECT_EQ(SequenceOf(batches, FakeEngine::Bytes(ahead)), 0);
  const auto first_decode = std::find_if(batches.begin(), batches.end(), [](const std::vector<DecodeItem>& b) {
    return DecodingIn(b).count(0) > 0 && DecodingIn(b).size() == 4;
  });
  ASSERT_NE(first_decode, batches.end());
  EXPECT_EQ(DecodingIn(*first_decode), (std::set<int32_t>{0, 1, 2, 3}));
}

// The queue's turn is the heavy peer's (the light one was served last), and the heavy peer's
// queued request may not take a sequence: the light one's is admitted anyway, not held behind
// it until a heavy request ends.
TEST(EngineWorkerClasses, APeerWhoseTurnItIsButWhoMayNotTakeASequenceHoldsNoOneBack) {
  Rig rig(kSixSequences, FourWide());
  std::vector<std::shared_ptr<JobChannel>> heavy = HeavyPeer(rig, 40);
  auto first = rig.Submit(Classed(Raw("light one", 2), RequestClass::kNormal, 2000));
  for (int i = 0; i < 12 && rig.worker->stats().requests == 0; ++i) ASSERT_TRUE(rig.Step());
  ASSERT_EQ(rig.worker->stats().requests, 1u) << "the light peer's first request did not end";
  ASSERT_TRUE(Await(*first).has_value());
  ExpectAdmittedAtOnce(rig, Classed(Raw("light two", 2), RequestClass::kNormal, 2000));
  for (auto& channel : heavy) ASSERT_TRUE(Await(*channel).has_value());
}

TEST(EngineWorkerClasses, APausedDeviceHoldsBackgroundWorkAndItResumesWithTheSameTokens) {
  std::atomic<BackgroundAction> mode{BackgroundAction::kPause};
  WorkerOptions options = TestOptions();
  options.background_mode = [&mode] { return mode.load(); };
  Rig rig({}, options);
  auto background = rig.Submit(Classed(Raw("summarise the day", 12), RequestClass::kBackground));
  auto normal = rig.Run(Raw("a normal request", 6));
  ASSERT_TRUE(normal.has_value());
  ASSERT_TRUE(llmd::testing::WaitFor([&] { return rig.worker->stats().paused == 1; }, llmd::testing::kLiveness));
  // Paused, it cannot have ended, whatever the timing.
  EXPECT_FALSE(background->TryPop().has_value());
  mode = BackgroundAction::kRun;
  auto done = Await(*background);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();
  EXPECT_EQ(done->tokens, Solo(Raw("summarise the day", 12)));
}

TEST(EngineWorkerClasses, OnRecurrentMemoryAPausedJobResumesWithTheTokensOfItsSoloRun) {
  const FakeEngineOptions recurrent{.sequences = 2, .memory = FakeMemory::kRecurrent};
  WorkerOptions options = NarrowOptions();
  options.decode_width = 1;
  Rig rig(recurrent, options);
  const std::string long_prompt(300, 'b');
  rig.fake->HoldDecodes();
  auto background = rig.Submit(Classed(Raw(long_prompt, 20), RequestClass::kBackground));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rig.Step());
  auto voice = rig.Submit(Classed(Raw("interrupting voice", 5), RequestClass::kInteractive));
  rig.Release();
  auto voice_done = Await(*voice);
  auto background_done = Await(*background);
  ASSERT_TRUE(voice_done.has_value() && background_done.has_value());
  EXPECT_EQ(background_done->tokens, Solo(Raw(long_prompt, 20), recurrent, options));
  EXPECT_EQ(voice_done->tokens, Solo(Raw("interrupting voice", 5), recurrent, options));
  EXPECT_EQ(MostDecodingInAStep(rig.fake->batches()), 1u);
  EXPECT_GE(rig.worker->stats().preemptions, 1u);
}

TEST(EngineWorkerClasses, AnInteractiveArrivalStopsABackgroundCallAndItsPromptIsComputedFirst) {
  const FakeEngineOptions engine{.sequences = 3, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, NarrowOptions());
  const Job background = Classed(Raw(std::string(100, 'b'), 20), RequestClass::kBackground);
  const Job voice = Classed(Raw("a person waits", 6), RequestClass::kInteractive);
  rig.fake->HoldDecodes();
  auto background_channel = rig.Submit(background);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the background prompt's call
  auto voice_channel = rig.Submit(voice);
  rig.Release();

  auto voice_done = Await(*voice_channel);
  auto background_done = Await(*background_channel);
  ASSERT_TRUE(voice_done.has_value()) << voice_done.error().ToString();
  ASSERT_TRUE(background_done.has_value()) << background_done.error().ToString();
  // The call that ran when the person arrived was stopped, and kept nothing: the first call
  // that ran computed the interactive prompt, then the background prompt was computed whole.
  const Batches stopped = rig.fake->stopped_batches();
  ASSERT_EQ(stopped.size(), 1u);
  const Batches batches = rig.fake->batches();
  const std::vector<TokenId> voice_prompt = FakeEngine::Bytes("a person waits");
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(BatchEndingPrompt(batches, voice_prompt), 0u);
  EXPECT_EQ(SequencesIn(batches[0]).size(), 1u);
  EXPECT_EQ(stopped[0].size(), 100u);  // the background prompt, whole in one call
  EXPECT_EQ(SequencesIn(stopped[0]), std::set<int32_t>{SequenceOf(batches, FakeEngine::Bytes(std::string(100, 'b')))});
  EXPECT_EQ(background_done->stats.preemptions, 1);
  // Nothing was lost and nothing changed: both answers are those of their solo runs.
  EXPECT_EQ(voice_done->tokens, Solo(voice, engine, NarrowOptions()));
  EXPECT_EQ(background_done->tokens, Solo(background, engine, NarrowOptions()));
}

TEST(EngineWorkerClasses, AStoppedCallIsPutOffOnceThenRunsWholeSoArrivalsSlowLowerClassesButNeverStopThem) {
  const FakeEngineOptions engine{.sequences = 4, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, NarrowOptions());
  const Job background = Classed(Raw(std::string(100, 'b'), 8), RequestClass::kBackground);
  rig.fake->HoldDecodes();
  auto background_channel = rig.Submit(background);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the background prompt's call
  auto first = rig.Submit(Classed(Raw("first voice", 4), RequestClass::kInteractive));
  ASSERT_TRUE(rig.Step());  // the background call is stopped; the first voice's prompt is held
  auto second = rig.Submit(Classed(Raw("second voice!", 4), RequestClass::kInteractive));
  rig.Release();
  auto background_done = Await(*background_channel);
  for (auto* channel : {&first, &second}) ASSERT_TRUE(Await(**channel).has_value());
  ASSERT_TRUE(background_done.has_value()) << background_done.error().ToString();
  // The second arrival came while the first voice's prompt was computed, and found the
  // background prompt stopped once already: its call in that step was put off, not started,
  // behind the second voice's prompt, and ran whole later.
  ASSERT_EQ(rig.fake->stopped_batches().size(), 1u);
  const Batches batches = rig.fake->batches();
  ASSERT_GE(batches.size(), 3u);
  EXPECT_EQ(BatchEndingPrompt(batches, FakeEngine::Bytes("first voice")), 0u);
  const int32_t background_sequence = rig.fake->stopped_batches()[0][0].sequence;
  const auto next = std::find_if(batches.begin(), batches.end(), [&](const std::vector<DecodeItem>& b) {
    return SequencesIn(b).count(background_sequence) > 0;
  });
  ASSERT_NE(next, batches.end());
  EXPECT_LT(BatchEndingPrompt(batches, FakeEngine::Bytes("second voice!")), static_cast<size_t>(next - batches.begin()));
  // The stopped prompt's next call runs whole, so it is a short chunk (whole_chunk_tokens);
  // the calls after it may be stopped again, and go in chunks of shared_prefill_tokens.
  EXPECT_EQ(next->size(), static_cast<size_t>(NarrowOptions().whole_chunk_tokens));
  const auto after = std::find_if(next + 1, batches.end(), [&](const std::vector<DecodeItem>& b) {
    return SequencesIn(b).count(background_sequence) > 0;
  });
  ASSERT_NE(after, batches.end());
  EXPECT_EQ(after->size(), static_cast<size_t>(NarrowOptions().shared_prefill_tokens));
  // Stopped once, then paused while the two voices took the width of two.
  EXPECT_EQ(background_done->stats.preemptions, 2);
  EXPECT_EQ(background_done->tokens, Solo(background, engine, NarrowOptions()));
}

// Within a class a peer's first request stands before another peer's later ones (as the step
// policy ranks them): it stops the call of the other peer's second request, not of its first.
TEST(EngineWorkerClasses, APeersFirstRequestStopsTheCallOfAnotherPeersLaterOne) {
  const FakeEngineOptions engine{.sequences = 6, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, FourWide());
  const Job heavy_first = Classed(Raw("the heavy peer's first", 8), RequestClass::kNormal, 1000);
  const Job heavy_second = Classed(Raw(std::string(100, 'h'), 8), RequestClass::kNormal, 1000);
  const Job light = Classed(Raw("the light peer", 4), RequestClass::kNormal, 2000);
  rig.fake->HoldDecodes();
  auto first_channel = rig.Submit(heavy_first);
  auto second_channel = rig.Submit(heavy_second);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the heavy peer's first prompt
  // The held call is the heavy peer's second prompt (both were admitted together) or its
  // first request's decode (the second came a step later, and its prompt call follows).
  ASSERT_TRUE(rig.Step());
  auto light_channel = rig.Submit(light);
  rig.Release();
  auto light_done = Await(*light_channel);
  auto second_done = Await(*second_channel);
  auto first_done = Await(*first_channel);
  ASSERT_TRUE(light_done.has_value() && second_done.has_value() && first_done.has_value());
  // The second prompt's call was stopped while it computed, or skipped before it started:
  // either way it kept nothing, once. Where the held call was the first request's decode, that
  // call was stopped instead (a peer's first prompt goes before another's decode: the next test).
  const Batches stopped = rig.fake->stopped_batches();
  ASSERT_LE(stopped.size(), 1u);
  if (!stopped.empty()) {
    EXPECT_TRUE(stopped[0].size() == 100u || stopped[0].size() == 1u) << stopped[0].size();
  }
  EXPECT_EQ(second_done->stats.preemptions, 1);
  EXPECT_LE(first_done->stats.preemptions, 1);
  const Batches batches = rig.fake->batches();
  EXPECT_LT(BatchEndingPrompt(batches, FakeEngine::Bytes("the light peer")),
            BatchEndingPrompt(batches, FakeEngine::Bytes(std::string(100, 'h'))));
  EXPECT_EQ(light_done->tokens, Solo(light, engine, FourWide()));
  EXPECT_EQ(second_done->tokens, Solo(heavy_second, engine, FourWide()));
}

// Of two peers' first requests in a class, the one whose prompt is still to compute goes first:
// its arrival stops the other peer's running decode call, and its prompt call runs before that
// peer's decode, so a peer with nothing running waits for no one else's tokens.
TEST(EngineWorkerClasses, APeersFirstPromptStopsAndGoesBeforeAnotherPeersDecode) {
  const FakeEngineOptions engine{.sequences = 6, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, FourWide());
  const Job streaming = Classed(Raw("the streaming peer", 8), RequestClass::kNormal, 1000);
  const Job arriving = Classed(Raw("the arriving peer", 4), RequestClass::kNormal, 2000);
  SetLogLevel(LogLevel::kDebug);  // each call's debug line says what became of it
  ::testing::internal::CaptureStderr();
  rig.fake->HoldDecodes();
  auto streaming_channel = rig.Submit(streaming);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // its prompt
  ASSERT_TRUE(rig.Step());                            // its first decode, held
  const size_t before_arrival = rig.fake->batches().size();
  auto arriving_channel = rig.Submit(arriving);
  rig.Release();
  auto arriving_done = Await(*arriving_channel);
  auto streaming_done = Await(*streaming_channel);
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogLevel(LogLevel::kInfo);
  ASSERT_TRUE(arriving_done.has_value() && streaming_done.has_value());
  EXPECT_NE(log.find("decode_call step=2 outcome=stopped standing=4 tokens=1 prompt_tokens=0"), std::string::npos) << log;
  EXPECT_NE(log.find("outcome=ran standing=3 tokens=17 prompt_tokens=17"), std::string::npos) << log;
  // The held decode was stopped and kept nothing, once.
  const Batches stopped = rig.fake->stopped_batches();
  ASSERT_EQ(stopped.size(), 1u);
  ASSERT_EQ(stopped[0].size(), 1u);
  EXPECT_TRUE(stopped[0][0].logits);
  EXPECT_EQ(streaming_done->stats.preemptions, 1);
  EXPECT_EQ(arriving_done->stats.preemptions, 0);
  // The first call after the stop computed the arriving prompt; the streaming peer's decode came after.
  const Batches batches = rig.fake->batches();
  EXPECT_EQ(BatchEndingPrompt(batches, FakeEngine::Bytes("the arriving peer")), before_arrival);
  EXPECT_EQ(arriving_done->tokens, Solo(arriving, engine, FourWide()));
  EXPECT_EQ(streaming_done->tokens, Solo(streaming, engine, FourWide()));
}

// A stopped prompt goes on in short chunks (shared_prefill_tokens), each run whole: a call it may
// not be stopped in again holds off the next arrival for one short chunk, not the rest of its
// prompt.
TEST(EngineWorkerClasses, AStoppedPromptGoesOnInShortChunks) {
  const FakeEngineOptions engine{.sequences = 6, .prompt_calls_apart = true};  // a call per prompt
  WorkerOptions options = FourWide();
  options.shared_prefill_tokens = 16;
  Rig rig(engine, options);
  const std::string later_prompt(100, 'h');
  const Job heavy_first = Classed(Raw("the heavy peer's first", 8), RequestClass::kNormal, 1000);
  const Job heavy_second = Classed(Raw(later_prompt, 4), RequestClass::kNormal, 1000);
  const Job light = Classed(Raw("the light peer", 4), RequestClass::kNormal, 2000);
  rig.fake->HoldDecodes();
  auto first_channel = rig.Submit(heavy_first);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the first prompt
  auto second_channel = rig.Submit(heavy_second);
  ASSERT_TRUE(rig.Step());  // the first request's decode (it stands above the second's prompt)
  ASSERT_TRUE(rig.Step());  // the second prompt, whole: nothing of its class runs interactive
  auto light_channel = rig.Submit(light);
  rig.Release();
  auto light_done = Await(*light_channel);
  auto second_done = Await(*second_channel);
  auto first_done = Await(*first_channel);
  ASSERT_TRUE(light_done.has_value() && second_done.has_value() && first_done.has_value());
  const Batches stopped = rig.fake->stopped_batches();
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].size(), later_prompt.size());
  // After the stop its 100 prompt tokens went in calls of at most 16.
  const int32_t sequence = stopped[0][0].sequence;
  size_t total = 0, most = 0, calls = 0;
  for (const auto& batch : rig.fake->batches()) {
    const auto n = static_cast<size_t>(std::count_if(batch.begin(), batch.end(), [&](const DecodeItem& item) {
      return item.sequence == sequence && item.position < static_cast<int32_t>(later_prompt.size());
    }));
    if (n == 0) continue;
    total += n;
    most = std::max(most, n);
    ++calls;
  }
  EXPECT_EQ(total, later_prompt.size());
  EXPECT_EQ(most, 16u);
  EXPECT_EQ(calls, 7u);
  EXPECT_EQ(second_done->tokens, Solo(heavy_second, engine, options));
}

// Beside a person's decode, a background prompt goes in chunks that fit the decode call's own
// time (SharedPrefillTimeBudget), as measured: on a clock the fake engine moves by 1 ms a
// token, a decode call of one or two tokens costs 1-2 ms and a prompt token 1 ms, so the
// chunks are at the floor, whole_chunk_tokens (16), not shared_prefill_tokens (64). Before
// anything is measured the token budget alone holds (the first run below).
TEST(EngineWorkerClasses, ABackgroundPromptBesideAPersonsDecodeFitsTheDecodeCallsTime) {
  for (const bool measured : {false, true}) {
    SCOPED_TRACE(measured ? "costs measured" : "nothing measured yet");
    FakeEngineOptions engine{.sequences = 4, .prompt_calls_apart = true};
    engine.item_ms = measured ? 1 : 0;
    Rig rig(engine, FourWide());
    if (measured) {
      ASSERT_TRUE(rig.Run(Classed(Raw(std::string(40, 'w'), 4), RequestClass::kBackground)).has_value());
    }
    const std::string background_prompt(200, 'b');
    const Job voice = Classed(Raw("a person waits", 60), RequestClass::kInteractive);
    const Job background = Classed(Raw(background_prompt, 4), RequestClass::kBackground);
    rig.fake->HoldDecodes();
    auto voice_channel = rig.Submit(voice);
    ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // the person's prompt
    auto background_channel = rig.Submit(background);
    rig.Release();
    auto voice_done = Await(*voice_channel);
    auto background_done = Await(*background_channel);
    ASSERT_TRUE(voice_done.has_value() && background_done.has_value());
    const int32_t sequence = SequenceOf(rig.fake->batches(), FakeEngine::Bytes(background_prompt));
    ASSERT_GE(sequence, 0);
    size_t total = 0, most = 0;
    for (const auto& batch : rig.fake->batches()) {
      const auto n = static_cast<size_t>(std::count_if(batch.begin(), batch.end(), [&](const DecodeItem& item) {
        return item.sequence == sequence && item.position < static_cast<int32_t>(background_prompt.size());
      }));
      total += n;
      most = std::max(most, n);
    }
    EXPECT_EQ(total, background_prompt.size());
    // The person decodes 60 tokens: the whole background prompt is computed beside them.
    EXPECT_EQ(most, static_cast<size_t>(measured ? FourWide().whole_chunk_tokens : FourWide().shared_prefill_tokens));
    EXPECT_EQ(voice_done->tokens, Solo(voice, engine, FourWide()));
    EXPECT_EQ(background_done->tokens, Solo(background, engine, FourWide()));
  }
}

// A peer whose request ended during a step and who sends its next one before the next
// admission stands as that peer's first: the ended request no longer counts as its holder.
TEST(EngineWorkerClasses, ARequestSentRightAfterThePeersLastEndedStandsAsItsFirst) {
  const FakeEngineOptions engine{.sequences = 6, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, FourWide());
  const std::string later_prompt(100, 'h');
  rig.fake->HoldDecodes();
  auto heavy_first = rig.Submit(Classed(Raw("the heavy peer's first", 8), RequestClass::kNormal, 1000));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // its prompt
  auto heavy_second = rig.Submit(Classed(Raw(later_prompt, 4), RequestClass::kNormal, 1000));
  auto light_first = rig.Submit(Classed(Raw("light one", 1), RequestClass::kNormal, 2000));
  ASSERT_TRUE(rig.Step());  // the next step: the light prompt first, held
  ASSERT_TRUE(rig.Step());  // the light request ends (one token); the heavy decode, held
  ASSERT_TRUE(rig.Step());  // the heavy peer's second prompt, held
  auto light_second = rig.Submit(Classed(Raw("light two", 4), RequestClass::kNormal, 2000));
  rig.Release();
  for (auto* channel : {&heavy_first, &heavy_second, &light_first, &light_second}) {
    ASSERT_TRUE(Await(**channel).has_value());
  }
  const Batches stopped = rig.fake->stopped_batches();
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].size(), later_prompt.size());
  const Batches batches = rig.fake->batches();
  EXPECT_LT(BatchEndingPrompt(batches, FakeEngine::Bytes("light two")),
            BatchEndingPrompt(batches, FakeEngine::Bytes(later_prompt)));
}

// Of two peers' first prompts in one step, the shorter is computed first.
TEST(EngineWorkerClasses, OfTwoPeersFirstPromptsTheShorterGoesFirst) {
  const FakeEngineOptions engine{.sequences = 6, .prompt_calls_apart = true};  // a call per prompt
  Rig rig(engine, FourWide());
  const std::string long_prompt(100, 'l');
  rig.fake->HoldDecodes();
  auto earlier = rig.Submit(Classed(Raw("an earlier peer", 4), RequestClass::kNormal, 3000));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // its prompt: the next two are admitted together
  auto long_one = rig.Submit(Classed(Raw(long_prompt, 4), RequestClass::kNormal, 1000));
  auto short_one = rig.Submit(Classed(Raw("short", 4), RequestClass::kNormal, 2000));
  rig.Release();
  for (auto* channel : {&earlier, &long_one, &short_one}) ASSERT_TRUE(Await(**channel).has_value());
  const Batches batches = rig.fake->batches();
  EXPECT_EQ(BatchEndingPrompt(batches, FakeEngine::Bytes("short")), 1u);
  EXPECT_EQ(BatchEndingPrompt(batches, FakeEngine::Bytes(long_prompt)), 2u);
}

TEST(EngineWorkerClasses, OnRecurrentMemoryARunningCallIsNeverStopped) {
  const FakeEngineOptions recurrent{.sequences = 3, .memory = FakeMemory::kRecurrent};
  Rig rig(recurrent, NarrowOptions());
  const Job background = Classed(Raw(std::string(100, 'b'), 8), RequestClass::kBackground);
  rig.fake->HoldDecodes();
  auto background_channel = rig.Submit(background);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto voice = rig.Submit(Classed(Raw("a person waits", 4), RequestClass::kInteractive));
  rig.Release();
  auto background_done = Await(*background_channel);
  ASSERT_TRUE(Await(*voice).has_value());
  ASSERT_TRUE(background_done.has_value());
  // The state moved on in place as the call ran: it could not be undone, so it ran whole.
  EXPECT_TRUE(rig.fake->stopped_batches().empty());
  EXPECT_EQ(background_done->tokens, Solo(background, recurrent, NarrowOptions()));
}

// The most prompt tokens in one of batches [from, to): an item without logits is a prompt
// token (a decoded token always asks for its logits).
size_t LargestPromptChunk(const Batches& batches, size_t from, size_t to) {
  size_t most = 0;
  for (size_t i = from; i < to && i < batches.size(); ++i) {
    const auto& batch = batches[i];
    most = std::max<size_t>(most, std::count_if(batch.begin(), batch.end(), [](const DecodeItem& item) { return !item.logits; }));
  }
  return most;
}

TEST(EngineWorkerClasses, OnceInteractiveWorkWasSeenLowerClassesShareEachStepsPrefill) {
  WorkerOptions options = TestOptions();
  options.shared_prefill_tokens = 16;
  Rig rig({}, options);
  ASSERT_TRUE(rig.Run(Classed(Raw(std::string(100, 'x'), 2), RequestClass::kBackground)).has_value());
  const size_t before_interactive = rig.fake->batches().size();
  ASSERT_TRUE(rig.Run(Classed(Raw("a person asked", 2), RequestClass::kInteractive)).has_value());
  const size_t after_interactive = rig.fake->batches().size();
  const Job after = Classed(Raw(std::string(100, 'y'), 2), RequestClass::kBackground);
  auto done = rig.Run(after);
  ASSERT_TRUE(done.has_value()) << done.error().ToString();

  // Before any interactive work the prompt went in one step; after it (expected, none running),
  // 16 x kExpectedChunkFactor tokens a step, so an arriving interactive request stops a short call.
  const size_t expected_chunk = 16 * kExpectedChunkFactor;
  const Batches batches = rig.fake->batches();
  EXPECT_GT(LargestPromptChunk(batches, 0, before_interactive), expected_chunk);
  EXPECT_EQ(LargestPromptChunk(batches, after_interactive, batches.size()), expected_chunk);
  EXPECT_GE(batches.size() - after_interactive, 100u / expected_chunk);
  EXPECT_EQ(done->tokens, Solo(after));
}

TEST(EngineWorkerClasses, AConfigThatGrantsInteractiveSharesThePrefillFromTheStart) {
  WorkerOptions options = TestOptions();
  options.shared_prefill_tokens = 16;
  options.interactive_peers = true;
  Rig rig({.sequences = 2}, options);
  const Job first = Classed(Raw(std::string(60, 'a'), 2), RequestClass::kNormal);
  const Job second = Classed(Raw(std::string(60, 'b'), 2), RequestClass::kBackground);
  rig.fake->HoldDecodes();
  auto first_channel = rig.Submit(first);
  auto second_channel = rig.Submit(second);
  rig.Release();
  ASSERT_TRUE(Await(*first_channel).has_value() && Await(*second_channel).has_value());
  // The two prompts share the budget of expected interactive work, 16 x kExpectedChunkFactor
  // tokens: no step holds more prompt tokens than that.
  const Batches batches = rig.fake->batches();
  EXPECT_LE(LargestPromptChunk(batches, 0, batches.size()), 16u * kExpectedChunkFactor);
}

// Memory pressure: a pool of 80 tokens holds the background job (40 prompt tokens and its
// answer) or the interactive one beside part of it, not both whole. The interactive step
// finds no room; the paused background job's memory is parked in host memory, or with no
// parking budget dropped and recomputed, and either way its answer is that of its solo run.
struct PressureCase {
  FakeMemory memory;
  uint64_t parked_budget_bytes;
};

class EngineWorkerPressure : public ::testing::TestWithParam<PressureCase> {};

TEST_P(EngineWorkerPressure, APausedJobGivesItsMemoryAndKeepsItsAnswer) {
  const FakeEngineOptions engine{.sequences = 2, .memory = GetParam().memory, .pool_tokens = 80};
  WorkerOptions options = TestOptions();
  options.decode_width = 1;
  options.parked_budget_bytes = GetParam().parked_budget_bytes;
  Rig rig(engine, options);
  const Job background = Classed(Raw(std::string(40, 'b'), 30), RequestClass::kBackground);
  const Job voice = Classed(Raw(std::string(30, 'v'), 6), RequestClass::kInteractive);
  rig.fake->HoldDecodes();
  auto background_channel = rig.Submit(background);
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(rig.Step());  // prefilled, and 11 tokens generated
  auto voice_channel = rig.Submit(voice);
  rig.Release();

  auto voice_done = Await(*voice_channel);
  auto background_done = Await(*background_channel);
  ASSERT_TRUE(voice_done.has_value()) << voice_done.error().ToString();
  ASSERT_TRUE(background_done.has_value()) << background_done.error().ToString();
  EXPECT_EQ(voice_done->tokens, Solo(voice, engine, options));
  EXPECT_EQ(background_done->tokens, Solo(background, engine, options));
  EXPECT_GE(background_done->stats.preemptions, 1);
  const WorkerStats stats = rig.worker->stats();
  if (GetParam().parked_budget_bytes > 0) {
    EXPECT_EQ(stats.parks, 1u);
    EXPECT_EQ(stats.recomputes, 0u);
  } else {
    EXPECT_EQ(stats.parks, 0u);
    EXPECT_EQ(stats.recomputes, 1u);
  }
  EXPECT_EQ(stats.parked, 0u);  // given back when it resumed
  EXPECT_EQ(stats.parked_bytes, 0u);
  EXPECT_FALSE(rig.fake->failed_batches().empty());  // the step that found no room
}

INSTANTIATE_TEST_SUITE_P(ParkedOrRecomputed, EngineWorkerPressure,
                         ::testing::Values(PressureCase{FakeMemory::kAttention, 1 << 20},
                                           PressureCase{FakeMemory::kAttention, 0},
                                           PressureCase{FakeMemory::kRecurrent, 1 << 20},
                                           PressureCase{FakeMemory::kRecurrent, 0}),
                         [](const ::testing::TestParamInfo<PressureCase>& info) {
                           return std::string(info.param.memory == FakeMemory::kAttention ? "Attention" : "Recurrent") +
                                  (info.param.parked_budget_bytes > 0 ? "Parked" : "Recomputed");
                         });

TEST(EngineWorkerClasses, QueuedJobsShowTheirPositionAndExpectedWait) {
  Rig rig({.sequences = 1, .step_ms = 100, .item_ms = 1}, TestOptions());
  ASSERT_TRUE(rig.Run(Raw("measured first", 4)).has_value());  // something measured
  rig.fake->HoldDecodes();
  auto running = rig.Submit(Raw("holds the only slot", 8));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  auto a = rig.Submit(Classed(Raw("peer a", 2), RequestClass::kNormal, 1000));
  auto b = rig.Submit(Classed(Raw("peer b", 2), RequestClass::kNormal, 2000));
  auto voice = rig.Submit(Classed(Raw("a person", 2), RequestClass::kInteractive, 3000));

  const std::vector<EngineWorker::QueuedJob> queued = rig.worker->Queued();
  ASSERT_EQ(queued.size(), 3u);
  EXPECT_EQ(queued[0].request_class, RequestClass::kInteractive);
  EXPECT_EQ(queued[0].peer_uid, 3000u);
  EXPECT_EQ(queued[1].peer_uid, 1000u);
  EXPECT_EQ(queued[2].peer_uid, 2000u);
  for (size_t i = 0; i < queued.size(); ++i) {
    EXPECT_EQ(queued[i].position, i + 1);
    EXPECT_TRUE(queued[i].estimate.known);
    EXPECT_EQ(queued[i].estimate.ahead, i + (i == 0 ? 0 : 1));  // and the running job, for its class
  }
  // A later place in the queue waits behind more: stated in jobs ahead, not in milliseconds.
  EXPECT_LT(queued[1].estimate.ahead, queued[2].estimate.ahead);
  rig.Release();
  for (auto* channel : {&running, &a, &b, &voice}) ASSERT_TRUE(Await(**channel).has_value());
  EXPECT_TRUE(rig.worker->Queued().empty());
}

// Deadlines, on a clock that the fake engine moves by 100 ms a step: what the worker measured
// decides.
TEST(EngineWorkerClasses, ADeadlineTheEstimateCannotMeetIsRefusedAtOnceAndAQueuedOneExpires) {
  Rig rig({.sequences = 1, .step_ms = 100, .item_ms = 1}, TestOptions());
  Job unmeasured = Raw("before anything is measured", 4);
  unmeasured.first_token_deadline_ms = 1;
  ASSERT_TRUE(rig.Run(std::move(unmeasured)).has_value());  // nothing known: nothing refused
  EXPECT_TRUE(rig.worker->EstimateFirstToken(RequestClass::kNormal, 10).known);

  rig.fake->HoldDecodes();
  auto running = rig.Submit(Raw("holds the only slot for a while", 20));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  Job hopeless = Raw("wanted within a millisecond", 4);
  hopeless.first_token_deadline_ms = 1;
  const Status refused = rig.worker->Submit(std::move(hopeless));
  EXPECT_EQ(refused.reason(), ErrorReason::kDeadlineUnmeetable);
  EXPECT_NE(refused.message().find("1 requests ahead"), std::string::npos) << refused.message();

  // A deadline the estimate allows, which then passes while the job waits for the slot.
  const WaitEstimate now = rig.worker->EstimateFirstToken(RequestClass::kNormal, 10);
  Job hopeful = Raw("a deadline it may meet", 4);
  hopeful.first_token_deadline_ms = now.first_token_ms() + 1;
  auto queued = rig.Submit(std::move(hopeful));
  // Each step moves the clock 100 ms; the running job has 20 tokens to go, so the deadline
  // passes first.
  std::optional<JobEvent> end;
  for (int i = 0; i < 30 && !end.has_value(); ++i) {
    ASSERT_TRUE(rig.Step());
    end = queued->TryPop();
  }
  ASSERT_TRUE(end.has_value()) << "the queued job's deadline never passed";
  EXPECT_EQ(end->type, JobEvent::Type::kError);
  EXPECT_EQ(end->error.code(), StatusCode::kDeadlineExceeded) << end->error.ToString();
  rig.Release();
  ASSERT_TRUE(Await(*running).has_value());
}

}  // namespace
}  // namespace llmd::sched
