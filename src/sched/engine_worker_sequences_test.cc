// The worker and the sequences it decodes: where each sequence has its own KV stream,
// llama.cpp computes each run of consecutive sequence ids of a call as a micro-batch of its
// own (a pass over the weights), so the worker keeps calls sorted and the decoding sequences
// together. On the fake engine, stated in calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using namespace test_rig;  // NOLINT(google-build-using-namespace): test helpers

// With a KV stream per sequence llama.cpp computes each run of consecutive sequences as a
// micro-batch of its own: a new job takes the free slot that keeps the busy ones consecutive
// (sequence 1 between 0 and 2), not the least recently used one (3, never used).
TEST(EngineWorker, ANewJobTakesTheFreeSlotThatKeepsTheBusySequencesConsecutive) {
  Rig rig({.sequences = 4}, TestOptions());
  rig.fake->HoldDecodes();
  auto a = rig.Submit(Raw("alpha job", 30));
  auto b = rig.Submit(Raw("bravo", 2));
  auto c = rig.Submit(Raw("charlie job", 30));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  for (int i = 0; i < 12 && rig.worker->stats().requests == 0; ++i) ASSERT_TRUE(rig.Step());
  ASSERT_EQ(rig.worker->stats().requests, 1u) << "the short job did not end";
  const Batches before = rig.fake->batches();
  ASSERT_EQ(SequenceOf(before, FakeEngine::Bytes("alpha job")), 0);
  ASSERT_EQ(SequenceOf(before, FakeEngine::Bytes("bravo")), 1);
  ASSERT_EQ(SequenceOf(before, FakeEngine::Bytes("charlie job")), 2);
  auto d = rig.Submit(Raw("delta, the new job", 4));  // prompts of distinct lengths (SequenceOf)
  rig.Release();
  for (auto* channel : {&a, &b, &c, &d}) ASSERT_TRUE(Await(**channel).has_value());
  EXPECT_EQ(SequenceOf(rig.fake->batches(), FakeEngine::Bytes("delta, the new job")), 1);
}

// A cache a higher class left is the last free sequence a lower class's job takes: the
// person's request on 1 ends beside alpha on 0, and bravo, a background job, takes 2 (two
// runs) and not 1 (one run, but the person's cache dropped); the person's next request, with
// the same system prompt, then reuses it. Without classes the same jobs keep the runs whole.
TEST(EngineWorkerClasses, ABackgroundJobLeavesThePersonsCacheForTheirNextRequest) {
  for (const bool classes : {true, false}) {
    SCOPED_TRACE(classes ? "classes" : "all normal");
    const auto of = [&](RequestClass c) { return classes ? c : RequestClass::kNormal; };
    Rig rig({.sequences = 4}, TestOptions());
    const std::string first_voice = "the person's system prompt. What time is it?";
    const std::string next_voice = "the person's system prompt. And the weather tomorrow?";
    rig.fake->HoldDecodes();
    auto alpha = rig.Submit(Classed(Raw("alpha job", 40), of(RequestClass::kBackground)));
    ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));  // alpha's prompt, on 0
    auto voice = rig.Submit(Classed(Raw(first_voice, 1), of(RequestClass::kInteractive)));
    for (int i = 0; i < 12 && rig.worker->stats().requests == 0; ++i) ASSERT_TRUE(rig.Step());
    ASSERT_EQ(rig.worker->stats().requests, 1u) << "the person's request did not end";
    auto bravo = rig.Submit(Classed(Raw("bravo, the next background job", 8), of(RequestClass::kBackground)));
    for (int i = 0; i < 12 && SequenceOf(rig.fake->batches(), FakeEngine::Bytes("bravo, the next background job")) < 0; ++i) {
      ASSERT_TRUE(rig.Step());
    }
    auto next = rig.Submit(Classed(Raw(next_voice, 1), of(RequestClass::kInteractive)));
    rig.Release();
    auto next_done = Await(*next);
    for (auto* channel : {&alpha, &voice, &bravo}) ASSERT_TRUE(Await(**channel).has_value());
    ASSERT_TRUE(next_done.has_value()) << next_done.error().ToString();
    const Batches batches = rig.fake->batches();
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes("alpha job")), 0);
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes(first_voice)), 1);
    const int32_t bravo_sequence = SequenceOf(batches, FakeEngine::Bytes("bravo, the next background job"));
    const size_t shared = CommonPrefix(FakeEngine::Bytes(first_voice), FakeEngine::Bytes(next_voice));
    if (classes) {
      EXPECT_EQ(bravo_sequence, 2);
      EXPECT_EQ(SequenceOf(batches, FakeEngine::Bytes(next_voice)), 1);
      EXPECT_EQ(next_done->stats.cached_tokens, static_cast<int32_t>(shared));
    } else {
      EXPECT_EQ(bravo_sequence, 1);
      EXPECT_EQ(next_done->stats.cached_tokens, 0);
    }
  }
}

// Where each sequence's KV stream makes a run of consecutive sequences a pass of its own, a
// lower-class run that a gap leaves alone beside the person's sits the step out
// (step_policy.h) where no slot can move into the gap (this engine copies no sequences; the
// test below moves one): background jobs on 0, 1 and 2, a person's on 3; the job on 1 ends,
// and the one on 0 waits while 2 and 3 decode in one run. With one stream for all it decodes
// beside them. Either way every answer is its solo run's.
TEST(EngineWorkerClasses, ALowerSequenceLeftAloneByAGapSitsOutWhileAPersonsRequestRuns) {
  for (const bool streams : {true, false}) {
    SCOPED_TRACE(streams ? "a stream per sequence" : "one stream");
    const FakeEngineOptions engine{.sequences = 5, .sequence_copy = false, .stream_per_sequence = streams};
    WorkerOptions options = TestOptions();
    options.decode_width = 3;
    Rig rig(engine, options);
    const Job a = Classed(Raw("alpha job", 30), RequestClass::kBackground);
    const Job b = Classed(Raw("bravo", 6), RequestClass::kBackground);
    const Job c = Classed(Raw("charlie job", 30), RequestClass::kBackground);
    const Job voice = Classed(Raw("a person waits", 20), RequestClass::kInteractive);
    // Each job is queued before the step that admits it is formed, so the steps do not depend
    // on how fast the worker's thread runs: alpha's prompt is step 1, bravo's and charlie's
    // step 2, the three decode in step 3, and the person's request, coming in while step 3 is
    // held, stops that call and is admitted in its place.
    const std::vector<Completion> done = rig.RunInWaves({{a}, {b, c}, {voice}}, {0, 2});
    ASSERT_EQ(done.size(), 4u);
    const Batches batches = rig.fake->batches();
    const int32_t sa = SequenceOf(batches, FakeEngine::Bytes("alpha job"));
    const int32_t sb = SequenceOf(batches, FakeEngine::Bytes("bravo"));
    const int32_t sc = SequenceOf(batches, FakeEngine::Bytes("charlie job"));
    const int32_t sv = SequenceOf(batches, FakeEngine::Bytes("a person waits"));
    ASSERT_EQ(std::vector<int32_t>({sa, sb, sc, sv}), std::vector<int32_t>({0, 1, 2, 3}));
    // The steps after bravo's last token in which the person's request decodes.
    size_t after_bravo = 0, with_alpha = 0;
    bool bravo_ended = false;
    for (const auto& batch : batches) {
      const std::set<int32_t> decoding = DecodingIn(batch);
      if (bravo_ended && decoding.count(sv) > 0) {
        ++after_bravo;
        with_alpha += decoding.count(sa);
      }
      // Its last decode: the fifth of its six tokens (the sixth ends it), after its 5-token prompt.
      for (const auto& item : batch) bravo_ended = bravo_ended || (item.sequence == sb && item.position == 5 + 6 - 2);
    }
    ASSERT_GT(after_bravo, 0u) << "bravo ended after the person's request";
    EXPECT_EQ(rig.worker->stats().sequence_moves, 0u);
    EXPECT_EQ(with_alpha, streams ? 0u : after_bravo);
    if (streams) {
      EXPECT_GE(done[0].stats.preemptions, 1);
    }
    EXPECT_EQ(done[0].tokens, Solo(a, engine, options));
    EXPECT_EQ(done[2].tokens, Solo(c, engine, options));
    EXPECT_EQ(done[3].tokens, Solo(voice, engine, options));
  }
}

// llama.cpp computes a call in one micro-batch only if its sequences come in increasing order
// (each sequence has its own KV stream): every step's call is sorted, whatever order the jobs
// were admitted in and whichever slots they took.
TEST(EngineWorker, EveryCallListsItsSequencesInIncreasingOrder) {
  Rig rig({.sequences = 4}, TestOptions());
  rig.fake->HoldDecodes();
  std::vector<std::shared_ptr<JobChannel>> channels;
  // Background jobs take sequences 0 and 1; interactive ones, ranked first in every step
  // after, take 2 and 3.
  for (const char* prompt : {"background one", "background two!"}) {
    Job job = Raw(prompt, 8);
    job.request_class = RequestClass::kBackground;
    channels.push_back(rig.Submit(std::move(job)));
  }
  ASSERT_TRUE(rig.fake->WaitUntilHeld(kLivenessMs));
  ASSERT_TRUE(rig.Step());
  for (const char* prompt : {"interactive one", "interactive two!"}) {
    Job job = Raw(prompt, 6);
    job.request_class = RequestClass::kInteractive;
    channels.push_back(rig.Submit(std::move(job)));
  }
  rig.Release();
  for (auto& channel : channels) ASSERT_TRUE(Await(*channel).has_value());
  size_t with_several = 0;
  for (const auto& batch : rig.fake->batches()) {
    EXPECT_TRUE(std::is_sorted(batch.begin(), batch.end(),
                               [](const DecodeItem& a, const DecodeItem& b) { return a.sequence < b.sequence; }));
    with_several += SequencesIn(batch).size() > 1 ? 1 : 0;
  }
  EXPECT_GT(with_several, 0u);
}

// Background jobs alpha, bravo, charlie (40 tokens each) and delta (8), then a person's
// request (of another peer).
std::vector<Job> JobsLeavingAGap() {
  return {Classed(Raw("alpha job", 40), RequestClass::kBackground, 1000),
          Classed(Raw("bravo job!", 40), RequestClass::kBackground, 1000),
          Classed(Raw("charlie job", 40), RequestClass::kBackground, 1000),
          Classed(Raw("delta", 8), RequestClass::kBackground, 1000),
          Classed(Raw("a person waits", 20), RequestClass::kInteractive, 2000)};
}

// Alpha's prompt in step 1, the other three's in step 2, and the person's request comes while
// step 3 is held, stops that call and is admitted in its place.
std::vector<Completion> RunLeavingAGap(Rig& rig, const std::vector<Job>& jobs) {
  return rig.RunInWaves({{jobs[0]}, {jobs[1], jobs[2], jobs[3]}, {jobs[4]}}, {0, 2});
}

// Background jobs on 0-3 and a person's request on 4, the only free sequence: the width of 4
// pauses one background job (alpha on 0, the others then decode in one run, 1-4). The job on
// 3 ends, alpha would resume on 0 beside 1, 2 and 4 (two runs), and a slot moves into 3
// instead: of those whose move makes one run (alpha to 3, or the person's request to 3),
// the one holding the fewest tokens, alpha. Stated in calls: alpha's positions go on from 0 to
// 3, every generation call from the move until the person's request ends is one run, and every
// answer is its solo run's. With one stream for all (no pass per run) nothing moves.
TEST(EngineWorkerClasses, ASequenceMovesIntoTheGapLeftBesideAPersonsRequest) {
  for (const bool streams : {true, false}) {
    SCOPED_TRACE(streams ? "a stream per sequence" : "one stream");
    const FakeEngineOptions engine{.sequences = 5, .stream_per_sequence = streams};
    WorkerOptions options = TestOptions();
    options.decode_width = 4;
    Rig rig(engine, options);
    const std::vector<Job> jobs = JobsLeavingAGap();
    const std::vector<Completion> done = RunLeavingAGap(rig, jobs);
    ASSERT_EQ(done.size(), jobs.size());
    const Batches batches = rig.fake->batches();
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes("alpha job")), 0);
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes("delta")), 3);
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes("a person waits")), 4);
    // Alpha's last position on 0; the first position on 3 after delta's last decode (the
    // seventh of its eight tokens, after its 5-token prompt), and the call it came in.
    int32_t last_on_0 = -1, first_on_3 = -1;
    size_t moved_at = batches.size();
    bool delta_ended = false;
    for (size_t k = 0; k < batches.size(); ++k) {
      for (const auto& item : batches[k]) {
        if (item.sequence == 0) last_on_0 = item.position;
        if (delta_ended && item.sequence == 3 && first_on_3 < 0) {
          first_on_3 = item.position;
          moved_at = k;
        }
      }
      for (const auto& item : batches[k]) delta_ended = delta_ended || (item.sequence == 3 && item.position == 5 + 8 - 2);
    }
    ASSERT_TRUE(delta_ended);
    if (streams) {
      EXPECT_EQ(rig.worker->stats().sequence_moves, 1u);
      ASSERT_LT(moved_at, batches.size()) << "nothing decoded on 3 after delta ended";
      EXPECT_EQ(first_on_3, last_on_0 + 1) << "alpha goes on from where it was";
      for (size_t k = moved_at; k < batches.size(); ++k) {
        EXPECT_EQ(ItemsOf(batches[k], 0), 0u) << "call " << k << ": alpha's old sequence";
        if (ItemsOf(batches[k], 4) == 0) break;  // the person's request ended
        const std::set<int32_t> decoding = DecodingIn(batches[k]);
        EXPECT_EQ(Runs(std::vector<size_t>(decoding.begin(), decoding.end())), 1u) << "call " << k;
      }
    } else {
      EXPECT_EQ(rig.worker->stats().sequence_moves, 0u);
      EXPECT_EQ(first_on_3, -1) << "nothing decodes on 3 after delta";
    }
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(done[i].tokens, Solo(jobs[i], engine, options)) << i;
  }
}

// A move whose copy finds no room is undone: the slot decodes where it was, and nothing of
// its answer changes. The scenario of the test above on an engine whose copies all fail.
TEST(EngineWorkerClasses, AMoveWhoseCopyFindsNoRoomLeavesTheSlotWhereItWas) {
  const FakeEngineOptions engine{.sequences = 5, .copies_find_no_room = true, .stream_per_sequence = true};
  WorkerOptions options = TestOptions();
  options.decode_width = 4;
  Rig rig(engine, options);
  const std::vector<Job> jobs = JobsLeavingAGap();
  const std::vector<Completion> done = RunLeavingAGap(rig, jobs);
  ASSERT_EQ(done.size(), jobs.size());
  EXPECT_EQ(rig.worker->stats().sequence_moves, 0u);
  // Alpha decodes on 0 to its end, and never on 3 after delta's.
  const Batches batches = rig.fake->batches();
  size_t alpha_on_0 = 0;
  for (const auto& batch : batches) alpha_on_0 += DecodingIn(batch).count(0);
  EXPECT_EQ(alpha_on_0, 40u - 1) << "its 40 tokens, the first from its prompt call";
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(done[i].tokens, Solo(jobs[i], engine, options)) << i;
}

// The gap held by a job that waits: background jobs on 0-3 and a person's request on 4 (the
// width of 4 pauses alpha on 0), 7 sequences. Delta on 3 ends, and echo, queued behind it,
// takes 3 to compute its prompt ahead, which waits while the person's request runs. Echo
// moves aside (to a free sequence), alpha into 3; when the person's request ends, echo's
// prompt moves to where it decodes beside the others. Stated in calls: every call that
// decodes the width's four sequences is one run, and every answer is its solo run's. With one
// stream for all nothing moves.
TEST(EngineWorkerClasses, AJobWaitingInTheGapMovesAsideAndBackBesideTheOthers) {
  for (const bool streams : {true, false}) {
    SCOPED_TRACE(streams ? "a stream per sequence" : "one stream");
    const FakeEngineOptions engine{.sequences = 7, .stream_per_sequence = streams};
    WorkerOptions options = TestOptions();
    options.decode_width = 4;
    Rig rig(engine, options);
    const std::vector<Job> jobs = {Classed(Raw("alpha job", 40), RequestClass::kBackground, 1000),
                                   Classed(Raw("bravo job!", 40), RequestClass::kBackground, 1000),
                                   Classed(Raw("charlie job", 40), RequestClass::kBackground, 1000),
                                   Classed(Raw("delta", 8), RequestClass::kBackground, 1000),
                                   Classed(Raw("a person waits", 20), RequestClass::kInteractive, 2000),
                                   Classed(Raw("echo, the next one", 30), RequestClass::kBackground, 1000)};
    const std::vector<Completion> done =
        rig.RunInWaves({{jobs[0]}, {jobs[1], jobs[2], jobs[3]}, {jobs[4]}, {jobs[5]}}, {0, 2, 1});
    ASSERT_EQ(done.size(), jobs.size());
    const Batches batches = rig.fake->batches();
    ASSERT_EQ(SequenceOf(batches, FakeEngine::Bytes("a person waits")), 4);
    size_t full = 0, split = 0;
    for (const auto& batch : batches) {
      const std::set<int32_t> decoding = DecodingIn(batch);
      if (decoding.size() < 4) continue;
      ++full;
      split += Runs(std::vector<size_t>(decoding.begin(), decoding.end())) > 1 ? 1 : 0;
    }
    ASSERT_GT(full, 0u);
    if (streams) {
      EXPECT_GE(rig.worker->stats().sequence_moves, 2u);
      EXPECT_EQ(split, 0u) << "of " << full << " calls of four";
    } else {
      EXPECT_EQ(rig.worker->stats().sequence_moves, 0u);
      EXPECT_GT(split, 0u) << "the gap stays where nothing moves";
    }
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(done[i].tokens, Solo(jobs[i], engine, options)) << i;
  }
}

}  // namespace
}  // namespace llmd::sched
