#include "http/metrics_page.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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
    models_.emplace_back("m", sched::WorkerRef(&worker_, [](sched::EngineWorker*) {}));  // not owned
  }
  std::shared_ptr<const config::DaemonConfig> config() const override { return config_; }
  sched::ModelList models() const override { return models_; }
  bool ready() const override { return true; }
  bool stopping() const override { return false; }
  void RequestShutdown() override {}
  sched::RateLimiter& rate_limiter() override { return rate_limiter_; }
  sched::RequestCounters& requests() override { return requests_; }
  std::vector<sched::AvailableModel> available() const override {
    return available_.empty() ? sched::ServerState::available() : available_;
  }
  sched::ModelLoadStats model_load_stats() const override { return load_stats_; }

  // As a registry would say them (models on demand).
  std::vector<sched::AvailableModel> available_;
  sched::ModelLoadStats load_stats_;

  // The counters the scheduler keeps, set as if it had run.
  sched::WorkerMetrics& metrics() { return const_cast<sched::WorkerMetrics&>(worker_.metrics()); }

 private:
  std::shared_ptr<config::DaemonConfig> config_;
  sched::EngineWorker worker_;
  sched::ModelList models_;
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

// Per peer UID and class: counters, refusals by reason, and the waits as summaries in seconds.
TEST(MetricsPage, PerClientSeries) {
  OneModel state;
  EXPECT_NE(RenderMetricsPage(state).find("# TYPE llmd_client_requests_total counter\n# HELP"), std::string::npos)
      << "no client yet: the families, no samples";
  const sched::ClientId bg{1000, RequestClass::kBackground};
  state.clients().CountRequest(bg);
  state.clients().CountRequest(bg);
  state.clients().CountRefusal(bg, sched::Refusal::kBudget);
  engine::GenerationStats st;
  st.prompt_tokens = 40;
  st.cached_tokens = 10;
  st.generated_tokens = 8;
  st.queue_ms = 250;
  st.ttft_ms = 1500;
  st.preemptions = 2;
  state.clients().CountRun(bg, st);
  state.clients().CountRequest({std::nullopt, RequestClass::kNormal});

  const std::string page = RenderMetricsPage(state);
  for (const char* line : {
           "# TYPE llmd_client_requests_total counter\n",
           "llmd_client_requests_total{uid=\"1000\",class=\"background\"} 2\n",
           "llmd_client_requests_total{uid=\"unknown\",class=\"normal\"} 1\n",
           "llmd_client_refusals_total{uid=\"1000\",class=\"background\",reason=\"budget\"} 1\n",
           "llmd_client_refusals_total{uid=\"1000\",class=\"background\",reason=\"queue_full\"} 0\n",
           "llmd_client_refusals_total{uid=\"1000\",class=\"background\",reason=\"busy\"} 0\n",
           "llmd_client_refusals_total{uid=\"1000\",class=\"background\",reason=\"deadline\"} 0\n",
           "# TYPE llmd_client_queue_wait_seconds summary\n",
           "llmd_client_queue_wait_seconds_sum{uid=\"1000\",class=\"background\"} 0.25\n",
           "llmd_client_queue_wait_seconds_count{uid=\"1000\",class=\"background\"} 1\n",
           "llmd_client_ttft_seconds_sum{uid=\"1000\",class=\"background\"} 1.5\n",
           "llmd_client_ttft_seconds_count{uid=\"unknown\",class=\"normal\"} 0\n",
           "llmd_client_prompt_tokens_total{uid=\"1000\",class=\"background\"} 40\n",
           "llmd_client_cached_prompt_tokens_total{uid=\"1000\",class=\"background\"} 10\n",
           "llmd_client_generated_tokens_total{uid=\"1000\",class=\"background\"} 8\n",
           "llmd_client_preemptions_total{uid=\"1000\",class=\"background\"} 2\n",
       }) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
}

// The models against the budget: gauges per loaded model only, counters by outcome and reason.
TEST(MetricsPage, ModelsLoadedAgainstTheBudget) {
  OneModel state;
  sched::AvailableModel m;
  m.name = "m";
  m.loaded = true;
  m.memory_bytes = 5000;
  sched::AvailableModel idle;
  idle.name = "idle";
  state.available_ = {m, idle};
  state.load_stats_.budget_bytes = 1 << 20;
  state.load_stats_.used_bytes = 5000;
  state.load_stats_.loads = 3;
  state.load_stats_.load_refusals = 1;
  state.load_stats_.unloads[static_cast<int>(sched::ModelUnload::kMemoryBudget)] = 2;
  const std::string page = RenderMetricsPage(state);
  for (const char* line : {
           "# TYPE llmd_models_available gauge\nllmd_models_available 2\n",
           "# TYPE llmd_models_loaded gauge\nllmd_models_loaded 1\n",
           "# TYPE llmd_model_loaded_bytes gauge\nllmd_model_loaded_bytes{model=\"m\"} 5000\n# HELP",
           "llmd_memory_budget_bytes 1048576\n",
           "llmd_memory_budget_used_bytes 5000\n",
           "llmd_model_loads_total{outcome=\"loaded\"} 3\n",
           "llmd_model_loads_total{outcome=\"failed\"} 0\n",
           "llmd_model_loads_total{outcome=\"refused\"} 1\n",
           "llmd_model_unloads_total{reason=\"keep_alive\"} 0\n",
           "llmd_model_unloads_total{reason=\"memory_budget\"} 2\n",
           "llmd_model_unloads_total{reason=\"removed\"} 0\n",
       }) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
  EXPECT_EQ(page.find("model=\"idle\""), std::string::npos) << "no series for a model not loaded";
}

}  // namespace
}  // namespace llmd::http
