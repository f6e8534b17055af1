// RequestDispatcher over fake-engine workers and a ServerState the test sets up: which worker
// serves a request, why one cannot run, the guard cascade's paths, and what each client is
// counted and charged (the ledger, the token budgets, on a ManualClock). Waiting itself is
// job_waiter_test.cc's subject.
#include "sched/request_dispatch.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sched/worker_test_rig.h"

namespace llmd::sched {
namespace {

using test_rig::Rig;

class TestState final : public ServerState {
 public:
  std::shared_ptr<const config::DaemonConfig> config() const override { return config_; }
  ModelList models() const override { return models_; }
  bool ready() const override { return true; }
  bool stopping() const override { return stopping_; }
  void RequestShutdown() override { stopping_ = true; }
  RateLimiter& rate_limiter() override { return limiter_; }
  RequestCounters& requests() override { return counters_; }

  // Not owned: the fixture's workers outlive the state.
  void Add(std::string name, EngineWorker& worker) {
    models_.emplace_back(std::move(name), WorkerRef(&worker, [](EngineWorker*) {}));
  }
  void SetGuardModel(std::string name) {
    auto c = std::make_shared<config::DaemonConfig>(*config_);
    c->guard_model = std::move(name);
    config_ = std::move(c);
  }
  void SetBudget(RequestClass request_class, uint32_t per_minute) {
    auto c = std::make_shared<config::DaemonConfig>(*config_);
    c->class_token_budgets[ClassIndex(request_class)] = per_minute;
    config_ = std::move(c);
  }

 private:
  std::shared_ptr<const config::DaemonConfig> config_ = std::make_shared<config::DaemonConfig>();
  ModelList models_;
  bool stopping_ = false;
  ManualClock clock_;
  RateLimiter limiter_{100, clock_};
  RequestCounters counters_;
};

RunRequest Request(std::optional<std::string> model, bool stream = false) {
  RunRequest r;
  r.api = "test";
  r.job = test_rig::Raw("once upon", 5);
  r.job.stream = stream;
  r.model = std::move(model);
  return r;
}

struct Fixture {
  Fixture() {
    state.Add("main", *main.worker);
    state.Add("guard", *guard.worker);
  }
  RunOutcome Dispatch(RunRequest r) { return RequestDispatcher(state, waiter).Dispatch(std::move(r)); }

  Rig main, guard;
  TestState state;
  ManualClock clock;  // the budgets' time; nothing here waits on it
  JobWaiter waiter{clock};
};

RunRequest From(uint32_t uid, RequestClass request_class, std::string prompt = "once upon") {
  RunRequest r = Request(std::nullopt);
  r.job = test_rig::Raw(std::move(prompt), 5);
  r.job.peer_uid = uid;
  r.job.request_class = request_class;
  return r;
}

// What a finished request costs its budget: its uncached prompt and generated tokens.
int64_t Cost(const engine::GenerationStats& st) { return st.prompt_tokens - st.cached_tokens + st.generated_tokens; }

const ClientCounters* Row(const std::vector<ClientRow>& rows, const std::string& uid, RequestClass c) {
  for (const ClientRow& row : rows) {
    if (row.uid == uid && row.request_class == c) return &row.counters;
  }
  return nullptr;
}

TEST(RequestDispatcher, ResolvesTheNamedModelOrTheDefault) {
  Fixture f;
  RequestDispatcher d(f.state, f.waiter);
  EXPECT_EQ(d.Resolve(Request(std::nullopt))->worker.get(), f.main.worker.get());
  EXPECT_EQ(d.Resolve(Request("guard"))->worker.get(), f.guard.worker.get());
  EXPECT_EQ(d.Resolve(Request("main"))->guard, nullptr) << "no guard asked for";
}

TEST(RequestDispatcher, AnUnknownModelNamesTheLoadedOnes) {
  Fixture f;
  RunOutcome o = f.Dispatch(Request("nope"));
  EXPECT_EQ(o.kind, RunOutcome::Kind::kError);
  EXPECT_EQ(o.error.reason(), ErrorReason::kUnknownModel);
  EXPECT_NE(o.error.message().find("available: main, guard"), std::string::npos) << o.error.ToString();
}

TEST(RequestDispatcher, NoModelLoadedIsAnErrorNotACrash) {
  TestState state;
  JobWaiter waiter;
  RunOutcome o = RequestDispatcher(state, waiter).Dispatch(Request(std::nullopt));
  EXPECT_EQ(o.error.reason(), ErrorReason::kUnknownModel);
}

TEST(RequestDispatcher, TheGuardNeedsALoadedGuardModel) {
  Fixture f;
  RunRequest r = Request(std::nullopt);
  r.guard = true;
  EXPECT_EQ(f.Dispatch(std::move(r)).error.code(), StatusCode::kInvalidArgument);
}

TEST(RequestDispatcher, AStoppingDaemonTakesNoRequest) {
  Fixture f;
  f.state.RequestShutdown();
  EXPECT_EQ(f.Dispatch(Request(std::nullopt)).error.reason(), ErrorReason::kShuttingDown);
}

TEST(RequestDispatcher, StreamsTheAnswerAndReturnsIt) {
  Fixture f;
  RunRequest r = Request(std::nullopt, /*stream=*/true);
  std::string streamed;
  r.on_text = [&](const JobEvent& e) {
    streamed += e.text;
    return true;
  };
  RunOutcome o = f.Dispatch(std::move(r));
  ASSERT_EQ(o.kind, RunOutcome::Kind::kDone) << o.error.ToString();
  EXPECT_EQ(o.completion.text.size(), 5u);
  EXPECT_EQ(streamed, o.completion.text);
}

TEST(RequestDispatcher, AReceiverThatStopsReadingIsAPeerGone) {
  Fixture f;
  RunRequest r = Request(std::nullopt, /*stream=*/true);
  r.on_text = [](const JobEvent&) { return false; };
  EXPECT_EQ(f.Dispatch(std::move(r)).kind, RunOutcome::Kind::kPeerGone);
}

// The fake guard's verdict is letters, not "Safety: Unsafe": the answer is allowed, held back
// until the verdict and then shown in one piece.
TEST(RequestDispatcher, AnAllowedAnswerIsShownWholeAfterTheVerdict) {
  Fixture f;
  f.state.SetGuardModel("guard");
  RunRequest r = Request(std::nullopt, /*stream=*/true);
  r.guard = true;
  r.guarded_prompt = "once upon";
  std::vector<std::string> pieces;
  r.on_text = [&](const JobEvent& e) {
    pieces.push_back(e.text);
    return true;
  };
  RunOutcome o = f.Dispatch(std::move(r));
  ASSERT_EQ(o.kind, RunOutcome::Kind::kDone) << o.error.ToString();
  EXPECT_FALSE(o.refused());
  EXPECT_EQ(pieces, std::vector<std::string>{o.completion.text});
}

// A UID whose budget is spent is refused before its request is queued, told to retry exactly
// when its bucket holds a token again; another UID is served meanwhile.
TEST(RequestDispatcher, ASpentTokenBudgetIsRefusedUntilItsBucketHoldsAToken) {
  Fixture f;
  f.state.SetBudget(RequestClass::kBackground, 6);  // a token each 10 s, 6 at most
  RunOutcome first = f.Dispatch(From(1000, RequestClass::kBackground));
  ASSERT_EQ(first.kind, RunOutcome::Kind::kDone) << first.error.ToString();
  const int64_t cost = Cost(first.completion.stats);
  ASSERT_GT(cost, 6) << "the first request overdraws the bucket";
  const int64_t wait_ms = (cost - 6 + 1) * 10000;  // the debt and one token, at 10 s a token

  RunOutcome refused = f.Dispatch(From(1000, RequestClass::kBackground));
  ASSERT_EQ(refused.kind, RunOutcome::Kind::kError);
  EXPECT_EQ(refused.error.reason(), ErrorReason::kBudgetExhausted);
  EXPECT_EQ(refused.error.retry_after_ms(), wait_ms);
  EXPECT_NE(refused.error.message().find("retry after " + std::to_string(wait_ms / 1000) + " s"), std::string::npos)
      << refused.error.message();
  EXPECT_EQ(f.main.worker->stats().requests, 1u) << "refused before it reached the worker";
  EXPECT_EQ(f.Dispatch(From(1001, RequestClass::kBackground)).kind, RunOutcome::Kind::kDone) << "another UID";
  EXPECT_EQ(f.Dispatch(From(1000, RequestClass::kNormal)).kind, RunOutcome::Kind::kDone) << "a class with no budget";

  f.clock.Advance(wait_ms - 1);
  EXPECT_EQ(f.Dispatch(From(1000, RequestClass::kBackground)).error.retry_after_ms(), 1);
  f.clock.Advance(1);
  EXPECT_EQ(f.Dispatch(From(1000, RequestClass::kBackground)).kind, RunOutcome::Kind::kDone);

  const auto rows = f.state.clients().Snapshot();
  const ClientCounters* spent = Row(rows, "1000", RequestClass::kBackground);
  ASSERT_NE(spent, nullptr);
  EXPECT_EQ(spent->requests, 4u);
  EXPECT_EQ(spent->refusals[static_cast<size_t>(Refusal::kBudget)], 2u);
  EXPECT_EQ(spent->refused(), 2u);
  ASSERT_NE(Row(rows, "1001", RequestClass::kBackground), nullptr);
  EXPECT_EQ(Row(rows, "1001", RequestClass::kBackground)->refused(), 0u);
}

// A served request is counted under its peer and class: its wait, first token and tokens.
TEST(RequestDispatcher, TheLedgerCountsEachServedRequestUnderItsPeerAndClass) {
  Fixture f;
  RunOutcome o = f.Dispatch(From(42, RequestClass::kInteractive));
  ASSERT_EQ(o.kind, RunOutcome::Kind::kDone) << o.error.ToString();
  RunRequest unknown = From(0, RequestClass::kNormal);
  unknown.job.peer_uid.reset();
  ASSERT_EQ(f.Dispatch(std::move(unknown)).kind, RunOutcome::Kind::kDone);

  const auto rows = f.state.clients().Snapshot();
  ASSERT_EQ(rows.size(), 2u);
  const ClientCounters* c = Row(rows, "42", RequestClass::kInteractive);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->requests, 1u);
  EXPECT_EQ(c->queue_waits, 1u);
  EXPECT_EQ(c->ttfts, 1u);
  EXPECT_EQ(c->generated_tokens, 5u);
  EXPECT_EQ(c->prompt_tokens, static_cast<uint64_t>(o.completion.stats.prompt_tokens));
  EXPECT_NE(Row(rows, "unknown", RequestClass::kNormal), nullptr);
}

// A peer that leaves mid-answer still pays for what its job generated.
TEST(RequestDispatcher, APeerThatLeavesIsChargedWhatItsJobGenerated) {
  Fixture f;
  f.state.SetBudget(RequestClass::kNormal, 6);
  RunRequest r = From(7, RequestClass::kNormal);  // 9 prompt tokens: more than the bucket holds
  r.job.stream = true;
  r.on_text = [](const JobEvent&) { return false; };
  ASSERT_EQ(f.Dispatch(std::move(r)).kind, RunOutcome::Kind::kPeerGone);
  EXPECT_EQ(f.Dispatch(From(7, RequestClass::kNormal)).error.reason(), ErrorReason::kBudgetExhausted);
  const auto rows = f.state.clients().Snapshot();  // Row points into it
  const ClientCounters* c = Row(rows, "7", RequestClass::kNormal);
  ASSERT_NE(c, nullptr);
  EXPECT_GT(c->prompt_tokens, 6u);
}

// Counting a prompt's tokens generates nothing: neither counted nor charged nor refused.
TEST(RequestDispatcher, CountingAPromptIsNoGeneration) {
  Fixture f;
  f.state.SetBudget(RequestClass::kNormal, 1);
  for (int i = 0; i < 2; ++i) {
    RunRequest r = From(7, RequestClass::kNormal);
    r.job.count_only = true;
    EXPECT_EQ(f.Dispatch(std::move(r)).kind, RunOutcome::Kind::kDone);
  }
  EXPECT_TRUE(f.state.clients().Snapshot().empty());
}

// A full queue refuses the request: counted as such, charged nothing.
TEST(RequestDispatcher, AFullQueueIsCountedAsTheClientsRefusal) {
  WorkerOptions options = test_rig::TestOptions();
  options.queue_depth = 1;
  Rig rig({.sequences = 1}, options);
  TestState state;
  state.Add("main", *rig.worker);
  ManualClock clock;
  JobWaiter waiter(clock);
  rig.fake->HoldDecodes();
  auto running = rig.Submit(test_rig::Raw("running job", 4));
  ASSERT_TRUE(rig.fake->WaitUntilHeld(test_rig::kLivenessMs));
  auto waiting = rig.Submit(test_rig::Raw("waiting job", 4));
  RunOutcome o = RequestDispatcher(state, waiter).Dispatch(From(9, RequestClass::kNormal));
  rig.Release();
  EXPECT_EQ(o.error.reason(), ErrorReason::kQueueFull);
  const auto rows = state.clients().Snapshot();  // Row points into it
  const ClientCounters* c = Row(rows, "9", RequestClass::kNormal);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->refusals[static_cast<size_t>(Refusal::kQueueFull)], 1u);
  EXPECT_EQ(c->queue_waits, 0u);
  ASSERT_TRUE(test_rig::Await(*running).has_value());
  ASSERT_TRUE(test_rig::Await(*waiting).has_value());
}

}  // namespace
}  // namespace llmd::sched
