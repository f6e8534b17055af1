// RequestDispatcher over fake-engine workers and a ServerState the test sets up: which worker
// serves a request, why one cannot run, and the guard cascade's paths. Waiting itself is
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
  const std::vector<std::pair<std::string, EngineWorker*>>& models() const override { return models_; }
  bool ready() const override { return true; }
  bool stopping() const override { return stopping_; }
  void RequestShutdown() override { stopping_ = true; }
  RateLimiter& rate_limiter() override { return limiter_; }
  RequestCounters& requests() override { return counters_; }

  void Add(std::string name, EngineWorker& worker) { models_.emplace_back(std::move(name), &worker); }
  void SetGuardModel(std::string name) {
    auto c = std::make_shared<config::DaemonConfig>(*config_);
    c->guard_model = std::move(name);
    config_ = std::move(c);
  }

 private:
  std::shared_ptr<const config::DaemonConfig> config_ = std::make_shared<config::DaemonConfig>();
  std::vector<std::pair<std::string, EngineWorker*>> models_;
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
  JobWaiter waiter;
};

TEST(RequestDispatcher, ResolvesTheNamedModelOrTheDefault) {
  Fixture f;
  RequestDispatcher d(f.state, f.waiter);
  EXPECT_EQ(d.Resolve(Request(std::nullopt))->worker, f.main.worker.get());
  EXPECT_EQ(d.Resolve(Request("guard"))->worker, f.guard.worker.get());
  EXPECT_EQ(d.Resolve(Request("main"))->guard, nullptr) << "no guard asked for";
}

TEST(RequestDispatcher, AnUnknownModelNamesTheLoadedOnes) {
  Fixture f;
  RunOutcome o = f.Dispatch(Request("nope"));
  EXPECT_EQ(o.kind, RunOutcome::Kind::kError);
  EXPECT_EQ(o.error.reason(), ErrorReason::kUnknownModel);
  EXPECT_NE(o.error.message().find("loaded: main, guard"), std::string::npos) << o.error.ToString();
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

}  // namespace
}  // namespace llmd::sched
