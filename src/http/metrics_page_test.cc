#include "http/metrics_page.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/clock.h"
#include "engine/fake_engine.h"

namespace llmd::http {
namespace {

// One model served by a worker over the fake engine, ready.
class OneModel final : public sched::ServerState {
 public:
  OneModel()
      : config_(std::make_shared<config::DaemonConfig>()),
        worker_(std::make_unique<engine::FakeEngine>(), sched::WorkerOptions()),
        rate_limiter_(100, RealClock::Get()) {
    models_.emplace_back("m", &worker_);
  }
  std::shared_ptr<const config::DaemonConfig> config() const override { return config_; }
  const std::vector<std::pair<std::string, sched::EngineWorker*>>& models() const override { return models_; }
  bool ready() const override { return true; }
  bool stopping() const override { return false; }
  void RequestShutdown() override {}
  sched::RateLimiter& rate_limiter() override { return rate_limiter_; }
  sched::RequestCounters& requests() override { return requests_; }

  // The counters the scheduler keeps, set as if it had run.
  sched::WorkerMetrics& metrics() { return const_cast<sched::WorkerMetrics&>(worker_.metrics()); }

 private:
  std::shared_ptr<config::DaemonConfig> config_;
  sched::EngineWorker worker_;
  std::vector<std::pair<std::string, sched::EngineWorker*>> models_;
  sched::RateLimiter rate_limiter_;
  sched::RequestCounters requests_;
};

TEST(MetricsPage, DraftCountersPerModel) {
  OneModel state;
  const std::string before = RenderMetricsPage(state);
  for (const char* line :
       {"# HELP llmd_draft_tokens_total Speculative decoding: tokens drafted and verified.\n"
        "# TYPE llmd_draft_tokens_total counter\nllmd_draft_tokens_total{model=\"m\"} 0\n",
        "# TYPE llmd_accepted_draft_tokens_total counter\nllmd_accepted_draft_tokens_total{model=\"m\"} 0\n"}) {
    EXPECT_NE(before.find(line), std::string::npos) << line << "\n" << before;
  }
  state.metrics().draft_tokens = 120;
  state.metrics().accepted_draft_tokens = 84;
  const std::string after = RenderMetricsPage(state);
  EXPECT_NE(after.find("llmd_draft_tokens_total{model=\"m\"} 120\n"), std::string::npos) << after;
  EXPECT_NE(after.find("llmd_accepted_draft_tokens_total{model=\"m\"} 84\n"), std::string::npos) << after;
}

}  // namespace
}  // namespace llmd::http
