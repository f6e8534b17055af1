// ModelRegistry over fake-engine workers and a loader the test drives: one load however many
// ask, a wait that times out while loading, the budget's least-recently-used unloading and
// its refusal, keep_alive 0, and a model withdrawn while a request holds it.
#include "daemon/model_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "engine/fake_engine.h"
#include "tests/support/wait_for.h"

namespace llmd::daemon {
namespace {

std::shared_ptr<sched::EngineWorker> NewWorker() {
  return std::make_shared<sched::EngineWorker>(std::make_unique<engine::FakeEngine>(), sched::WorkerOptions());
}

// Polls `done` (state, not time) up to the project's liveness bound.
template <typename Pred>
bool Eventually(Pred done) {
  return llmd::testing::WaitFor(done);
}

ModelSource Found(std::string name) {
  ModelSource s;
  s.name = std::move(name);
  s.path = "/models/" + s.name + ".gguf";
  s.keep_alive_ms = 5 * 60 * 1000;
  return s;
}

bool IsLoaded(const ModelRegistry& r, const std::string& name) {
  for (const auto& [n, w] : r.Loaded()) {
    if (n == name) return true;
  }
  return false;
}

struct Fixture {
  explicit Fixture(uint64_t budget = 0)
      : registry(
            budget,
            [this](const ModelSource& s) -> Result<LoadedModel> {
              ++loads;
              if (hold.load()) release.wait();
              if (s.name == "broken") return InvalidArgumentError("not a model");
              return LoadedModel{NewWorker(), 40};
            },
            [](const ModelSource&) -> uint64_t { return 40; }) {
    ModelSource d;
    d.name = "default";
    d.pinned = true;
    registry.AddConfigured(d, LoadedModel{NewWorker(), 40});
    registry.SetDiscovered({Found("a"), Found("b"), Found("broken")});
    registry.Start();
  }
  std::atomic<int> loads{0};
  std::atomic<bool> hold{false};
  std::promise<void> released;
  std::shared_future<void> release = released.get_future().share();
  ModelRegistry registry;
};

TEST(ModelRegistry, ListsEveryModelTheDefaultFirstAndLoadsOnlyTheConfiguredOne) {
  Fixture f;
  const auto available = f.registry.Available();
  ASSERT_EQ(available.size(), 4u);
  EXPECT_EQ(available[0].name, "default");
  EXPECT_TRUE(available[0].loaded);
  EXPECT_EQ(available[1].name, "a");
  EXPECT_FALSE(available[1].loaded);
  EXPECT_EQ(f.registry.Loaded().size(), 1u);
  EXPECT_EQ(f.loads, 0);
  auto unknown = f.registry.Acquire("nope", 0, std::nullopt);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().reason(), ErrorReason::kUnknownModel);
  EXPECT_NE(unknown.error().message().find("available: default, a, b, broken"), std::string::npos);
}

TEST(ModelRegistry, ConcurrentRequestsForOneModelShareOneLoad) {
  Fixture f;
  f.hold = true;
  std::vector<std::future<Result<sched::WorkerRef>>> asks;
  for (int i = 0; i < 4; ++i) {
    asks.push_back(std::async(std::launch::async, [&] { return f.registry.Acquire("a:latest", 0, std::nullopt); }));
  }
  ASSERT_TRUE(Eventually([&] { return f.loads.load() == 1; }));
  // The others are waiting for it, not loading it again; a loaded model serves meanwhile.
  auto other = f.registry.Acquire(std::nullopt, 0, std::nullopt);
  ASSERT_TRUE(other.has_value());
  f.released.set_value();
  sched::EngineWorker* first = nullptr;
  for (auto& ask : asks) {
    auto lease = ask.get();
    ASSERT_TRUE(lease.has_value()) << lease.error().ToString();
    if (first == nullptr) first = lease->get();
    EXPECT_EQ(lease->get(), first);
  }
  EXPECT_EQ(f.loads, 1);
  EXPECT_TRUE(IsLoaded(f.registry, "a"));
}

TEST(ModelRegistry, ARequestPastItsWaitIsBusyWhileTheModelLoads) {
  Fixture f;
  f.hold = true;
  auto late = f.registry.Acquire("a", 20, std::nullopt);
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(late.error().message().find("is loading"), std::string::npos) << late.error().ToString();
  f.released.set_value();
  auto now = f.registry.Acquire("a", 0, std::nullopt);
  EXPECT_TRUE(now.has_value());
}

TEST(ModelRegistry, AFailedLoadIsEachWaitersError) {
  Fixture f;
  auto broken = f.registry.Acquire("broken", 0, std::nullopt);
  ASSERT_FALSE(broken.has_value());
  EXPECT_NE(broken.error().message().find("not a model"), std::string::npos);
  EXPECT_FALSE(IsLoaded(f.registry, "broken"));
  EXPECT_EQ(f.registry.load_stats().load_failures, 1u);
  EXPECT_EQ(f.registry.load_stats().loads, 1u) << "the default, at startup";
}

TEST(ModelRegistry, TheBudgetUnloadsTheLeastRecentlyUsedIdleModelNeverThePinned) {
  Fixture f(/*budget=*/100);  // the default (40) and one more
  { ASSERT_TRUE(f.registry.Acquire("a", 0, std::nullopt).has_value()); }
  EXPECT_TRUE(IsLoaded(f.registry, "a"));
  { ASSERT_TRUE(f.registry.Acquire("b", 0, std::nullopt).has_value()); }
  EXPECT_FALSE(IsLoaded(f.registry, "a")) << "a made room";
  EXPECT_TRUE(IsLoaded(f.registry, "b"));
  EXPECT_TRUE(IsLoaded(f.registry, "default"));
  EXPECT_EQ(f.registry.used_bytes(), 80u);
  // b is held by a request: a cannot be loaded, and the refusal has the numbers.
  auto held = f.registry.Acquire("b", 0, std::nullopt);
  ASSERT_TRUE(held.has_value());
  auto refused = f.registry.Acquire("a", 0, std::nullopt);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.error().message().find("needs 0 MiB"), std::string::npos) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("b 0 MiB in use"), std::string::npos) << refused.error().ToString();
  EXPECT_NE(refused.error().message().find("default 0 MiB pinned"), std::string::npos) << refused.error().ToString();
  EXPECT_TRUE(IsLoaded(f.registry, "b")) << "nothing was unloaded for a load that could not fit";
  held = sched::WorkerRef();
  // A request's own keep_alive keeps b too.
  { ASSERT_TRUE(f.registry.Acquire("b", 0, int64_t{60000}).has_value()); }
  EXPECT_FALSE(f.registry.Acquire("a", 0, std::nullopt).has_value());
  // Without it, b goes.
  { ASSERT_TRUE(f.registry.Acquire("b", 0, std::nullopt).has_value()); }
  EXPECT_TRUE(f.registry.Acquire("a", 0, std::nullopt).has_value());
  EXPECT_FALSE(IsLoaded(f.registry, "b"));
  // What /metrics shows: the default at startup and three loads on demand, two evictions,
  // two refusals; the budget and what the default and a take of it.
  const sched::ModelLoadStats stats = f.registry.load_stats();
  EXPECT_EQ(stats.loads, 4u);
  EXPECT_EQ(stats.load_refusals, 2u);
  EXPECT_EQ(stats.load_failures, 0u);
  EXPECT_EQ(stats.unloads[static_cast<int>(sched::ModelUnload::kMemoryBudget)], 2u);
  EXPECT_EQ(stats.unloads[static_cast<int>(sched::ModelUnload::kKeepAlive)], 0u);
  EXPECT_EQ(stats.budget_bytes, 100u);
  EXPECT_EQ(stats.used_bytes, 80u);
}

TEST(ModelRegistry, KeepAliveZeroUnloadsOnceNoRequestHoldsIt) {
  Fixture f;
  auto lease = f.registry.Acquire("a", 0, int64_t{0});
  ASSERT_TRUE(lease.has_value());
  auto second = f.registry.Acquire("a", 0, int64_t{0});
  ASSERT_TRUE(second.has_value());
  sched::ModelList listing = f.registry.Loaded();  // a listing's copy holds no lease
  *lease = sched::WorkerRef();
  EXPECT_TRUE(IsLoaded(f.registry, "a")) << "still held by the second request";
  *second = sched::WorkerRef();
  EXPECT_TRUE(Eventually([&] { return !IsLoaded(f.registry, "a"); }));
  EXPECT_EQ(f.registry.load_stats().unloads[static_cast<int>(sched::ModelUnload::kKeepAlive)], 1u);
  // The listing's worker is stopped, not destroyed: asking it is safe.
  for (const auto& [name, w] : listing) {
    if (name != "a") continue;
    EXPECT_EQ(w->stats().active, 0u) << name;
    // Unlisted first (under the lock), then stopped and its engine freed (outside it).
    EXPECT_TRUE(Eventually([&] { return !w->Submit(sched::Job()).ok(); })) << name << ": a stopped worker refuses";
  }
  // The pinned default stays whatever a request says.
  { ASSERT_TRUE(f.registry.Acquire(std::nullopt, 0, int64_t{0}).has_value()); }
  { ASSERT_TRUE(f.registry.Acquire("b", 0, std::nullopt).has_value()); }  // the loader has looked again since
  EXPECT_TRUE(IsLoaded(f.registry, "default"));
}

TEST(ModelRegistry, AWithdrawnModelIsUnlistedAtOnceAndUnloadedWhenIdle) {
  Fixture f;
  auto lease = f.registry.Acquire("a", 0, std::nullopt);
  ASSERT_TRUE(lease.has_value());
  f.registry.SetDiscovered({Found("b")});
  for (const auto& m : f.registry.Available()) EXPECT_NE(m.name, "a");
  EXPECT_TRUE(IsLoaded(f.registry, "a")) << "its request still runs";
  EXPECT_EQ(f.registry.Acquire("a", 0, std::nullopt).error().reason(), ErrorReason::kUnknownModel);
  *lease = sched::WorkerRef();
  EXPECT_TRUE(Eventually([&] { return !IsLoaded(f.registry, "a"); }));
  EXPECT_EQ(f.registry.load_stats().unloads[static_cast<int>(sched::ModelUnload::kRemoved)], 1u);
  // Back on disk: listed and loadable again.
  f.registry.SetDiscovered({Found("a"), Found("b")});
  EXPECT_TRUE(f.registry.Acquire("a", 0, std::nullopt).has_value());
}

TEST(ModelRegistry, StopFailsTheWaitersAndStopsTheWorkers) {
  Fixture f;
  f.hold = true;
  auto waiter = std::async(std::launch::async, [&] { return f.registry.Acquire("a", 0, std::nullopt); });
  ASSERT_TRUE(Eventually([&] { return f.loads.load() == 1; }));
  std::thread stopper([&] { f.registry.Stop(); });
  auto r = waiter.get();
  EXPECT_FALSE(r.has_value());
  f.released.set_value();  // the load in flight ends; Stop joins the loader
  stopper.join();
  EXPECT_EQ(f.registry.Acquire(std::nullopt, 0, std::nullopt).error().reason(), ErrorReason::kShuttingDown);
}

}  // namespace
}  // namespace llmd::daemon
