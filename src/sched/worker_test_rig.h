// Test helpers for the scheduler over the fake engine (engine_worker_test.cc and
// engine_worker_speculative_test.cc): jobs, a worker rig with a manual clock, and readers of
// the fake's batch log. Tests only.
#ifndef LLMD_SCHED_WORKER_TEST_RIG_H_
#define LLMD_SCHED_WORKER_TEST_RIG_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/fake_engine.h"
#include "sched/engine_worker.h"
#include "tests/support/wait_for.h"

namespace llmd::sched::test_rig {

using engine::Completion;
using engine::DecodeItem;
using engine::FakeEngine;
using engine::FakeEngineOptions;
using engine::FakeMemory;
using engine::FinishReason;
using engine::TokenId;
using Batches = std::vector<std::vector<DecodeItem>>;

// How long a test waits for anything before it calls it lost: the project's liveness bound
// (tests/support/wait_for.h), never a claim on how fast the worker is.
constexpr int kLivenessMs = llmd::testing::kLivenessMillis;

// --- Jobs.

inline Job Chat(std::string system, std::string user, int32_t max_tokens) {
  Job job;
  job.prompt = OneShotChat{std::move(system), std::move(user)};
  job.options.max_tokens = max_tokens;
  job.options.sampling = engine::SamplingParams::Greedy();
  return job;
}

inline Job Raw(std::string prompt, int32_t max_tokens) {
  Job job;
  job.prompt = RawCompletion{std::move(prompt)};
  job.options.max_tokens = max_tokens;
  job.options.sampling = engine::SamplingParams::Greedy();
  return job;
}

// `job` in request class `c`, from peer `uid` (none: a peer of its own).
inline Job Classed(Job job, RequestClass c, std::optional<uint32_t> uid = std::nullopt) {
  job.request_class = c;
  job.peer_uid = uid;
  return job;
}

inline Job Turn(std::string session, std::string system, std::string user, int32_t max_tokens) {
  Job job;
  job.prompt = SessionTurn{std::move(session), std::move(system), std::move(user)};
  job.options.max_tokens = max_tokens;
  job.options.sampling = engine::SamplingParams::Greedy();
  return job;
}

inline std::vector<TokenId> ChatTokens(const std::string& system, const std::string& user) {
  return FakeEngine().ChatPrompt(system, user, true).value();
}

inline size_t CommonPrefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

// Waits for a job's final event: its Completion, or its error. Between looks it waits on the
// channel, so it wakes as soon as an event comes.
inline Result<Completion> Await(JobChannel& channel) {
  std::optional<Result<Completion>> final;
  const bool ended = llmd::testing::WaitFor(
      [&] {
        while (auto event = channel.TryPop()) {
          if (event->type == JobEvent::Type::kDone) final.emplace(std::move(event->completion));
          if (event->type == JobEvent::Type::kError) final.emplace(event->error);
          if (final.has_value()) return true;
        }
        return false;
      },
      llmd::testing::kLiveness, [&](int ms) { channel.Wait(ms); });
  if (!ended) return DeadlineExceededError("no final event within the liveness bound");
  return std::move(*final);
}

inline WorkerOptions TestOptions(int32_t batch_tokens = 512) {
  WorkerOptions options;
  options.batch_tokens = batch_tokens;
  // Off unless a test is about it: with a clock that never moves, the window would end only
  // when every slot has a job.
  options.admission_window_ms = 0;
  return options;
}

// A worker over a fake engine, which the test keeps a pointer to.
class Rig {
 public:
  explicit Rig(FakeEngineOptions engine_options = {}, WorkerOptions options = TestOptions()) {
    if (engine_options.step_ms > 0 || engine_options.item_ms > 0) engine_options.clock = &clock;
    auto engine = std::make_unique<FakeEngine>(engine_options);
    fake = engine.get();
    options.clock = &clock;
    worker = std::make_unique<EngineWorker>(std::move(engine), options);
  }
  ~Rig() {
    fake->ReleaseDecodes();
    worker.reset();
  }

  std::shared_ptr<JobChannel> Submit(Job job) {
    auto channel = job.channel;
    EXPECT_TRUE(worker->Submit(std::move(job)).ok());
    return channel;
  }
  // Runs `job` to its end.
  Result<Completion> Run(Job job) {
    auto channel = job.channel;
    if (Status st = worker->Submit(std::move(job)); !st.ok()) return st;
    return Await(*channel);
  }
  // Lets the held decode run and holds the one after it; false if none came.
  [[nodiscard]] bool Step() {
    fake->ReleaseOneDecode();
    return fake->WaitUntilHeld(kLivenessMs);
  }
  void Release() { fake->ReleaseDecodes(); }
  // Runs `waves` of jobs so that each wave is queued before the step that admits it is
  // formed, however fast the worker's thread runs: wave 0 alone in the first step, and each
  // later wave k while the step after `steps[k - 1]` more released ones is held (a wave that
  // outranks the held call stops it and is admitted in its place). Every job's completion, in
  // submission order; empty, with the test failed, if one fails.
  std::vector<Completion> RunInWaves(const std::vector<std::vector<Job>>& waves, const std::vector<int>& steps) {
    fake->HoldDecodes();
    std::vector<std::shared_ptr<JobChannel>> channels;
    for (size_t k = 0; k < waves.size(); ++k) {
      if (k == 1) {
        EXPECT_TRUE(fake->WaitUntilHeld(kLivenessMs));
      }
      for (int i = 0; k > 0 && i < steps[k - 1]; ++i) EXPECT_TRUE(Step());
      for (const Job& job : waves[k]) channels.push_back(Submit(job));
    }
    Release();
    std::vector<Completion> done;
    for (auto& channel : channels) {
      auto completion = Await(*channel);
      EXPECT_TRUE(completion.has_value()) << completion.error().ToString();
      if (!completion.has_value()) return {};
      done.push_back(*completion);
    }
    return done;
  }

  ManualClock clock;  // declared first: outlives the worker
  FakeEngine* fake = nullptr;
  std::unique_ptr<EngineWorker> worker;
};

// The tokens `job` generates alone on a fresh worker. On recurrent memory the worker's
// batch_tokens bounds where a prompt is cut (PrefillCuts), so compare under the same options.
inline std::vector<TokenId> Solo(Job job, FakeEngineOptions engine_options = {}, WorkerOptions options = TestOptions()) {
  Rig rig(engine_options, options);
  auto done = rig.Run(std::move(job));
  EXPECT_TRUE(done.has_value()) << done.error().ToString();
  return done.has_value() ? done->tokens : std::vector<TokenId>{};
}

// --- The batch log.

// The sequence that decoded the last token of `prompt` (its logits produced the first
// generated token); -1 if none did. Tests keep their prompts' lengths distinct.
inline int32_t SequenceOf(const Batches& batches, const std::vector<TokenId>& prompt) {
  for (const auto& batch : batches) {
    for (const auto& item : batch) {
      if (item.logits && item.position + 1 == static_cast<int32_t>(prompt.size()) && item.token == prompt.back()) {
        return item.sequence;
      }
    }
  }
  return -1;
}

inline std::set<int32_t> SequencesIn(const std::vector<DecodeItem>& batch) {
  std::set<int32_t> out;
  for (const auto& item : batch) out.insert(item.sequence);
  return out;
}

// The sequences that decode a generated token in `batch` (not a prompt token).
inline std::set<int32_t> DecodingIn(const std::vector<DecodeItem>& batch) {
  std::set<int32_t> out;
  for (const auto& item : batch) {
    if (item.prompt_tokens == 0) out.insert(item.sequence);
  }
  return out;
}

inline size_t ItemsOf(const std::vector<DecodeItem>& batch, int32_t sequence) {
  return static_cast<size_t>(
      std::count_if(batch.begin(), batch.end(), [&](const DecodeItem& i) { return i.sequence == sequence; }));
}

}  // namespace llmd::sched::test_rig

#endif  // LLMD_SCHED_WORKER_TEST_RIG_H_
