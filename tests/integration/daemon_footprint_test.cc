// Memory that follows use, on the real daemon: an idle daemon holds its weights and little
// else, an idle release frees the KV cache and scratch, and the answer after it is the same.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

#include "llmd/client.h"
#include "tests/support/http_harness.h"

namespace llmd::testing {
namespace {

// One sample of /metrics: `name{labels}` -> its value (0 when absent).
double Metric(const std::string& page, const std::string& series) {
  const size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(page.substr(at + series.size() + 2));
}

std::string MemorySeries(const std::string& model, const std::string& kind, const std::string& state) {
  return "llmd_memory_bytes{model=\"" + model + "\",kind=\"" + kind + "\",state=\"" + state + "\"}";
}

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

constexpr double kMiB = 1 << 20;

// 4 slots of 65536 tokens: a KV cache of 256 MiB that nobody uses yet. Before pages were
// committed on first write (patches/llama.cpp/0001) an idle daemon held all of it.
TEST(DaemonFootprint, AnIdleDaemonHoldsItsWeightsAndNotItsUnusedKvCache) {
  if (UnderSanitizer()) GTEST_SKIP() << "sanitizers keep shadow memory of their own";
  HttpDaemon d({"--parallel", "4", "--context", "65536", "--idle-release-after", "0"});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  const std::string page = d.Unix("GET", "/metrics").body;
  const std::string model = "tiny-q8_0";
  const double kv_reserved = Metric(page, MemorySeries(model, "kv", "reserved"));
  const double weights = Metric(page, MemorySeries(model, "weights", "reserved"));
  const double compute = Metric(page, MemorySeries(model, "compute", "reserved"));
  ASSERT_GE(kv_reserved, 100 * kMiB) << page;  // the test means something only with a big cache
  // The bound from the formula: weights + scratch + what warm-up wrote (a few cells) + the
  // process itself (code, heap, threads: generously 96 MiB). Nothing of the unused cache.
  const double rss = static_cast<double>(ResidentBytes(d.process().pid()));
  std::printf("idle RSS %.1f MiB: weights %.1f, compute %.1f reserved, KV %.1f reserved\n", rss / kMiB, weights / kMiB,
              compute / kMiB, kv_reserved / kMiB);
  EXPECT_LT(rss, weights + compute + 96 * kMiB)
      << "RSS " << rss / kMiB << " MiB; weights " << weights / kMiB << ", compute " << compute / kMiB
      << ", KV reserved " << kv_reserved / kMiB;
  EXPECT_LT(Metric(page, MemorySeries(model, "kv", "resident")), kv_reserved / 100) << page;
  EXPECT_GT(Metric(page, "llmd_process_resident_bytes{kind=\"anon\"}"), 0) << page;
}

TEST(DaemonFootprint, AfterAnIdleReleaseTheNextAnswerIsTheSame) {
  HttpDaemon d({"--temperature", "0", "--idle-release-after", "1s"});
  ASSERT_TRUE(d.process().ready()) << d.process().log();
  const std::string body = R"({"messages":[{"role":"system","content":"You answer in one line."},)"
                           R"({"role":"user","content":"Name a colour."}],"max_tokens":12,"temperature":0})";
  const HttpReply first = d.Unix("POST", "/v1/chat/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  // Idle for the release (the log line is the structure; the wait is a liveness bound).
  ASSERT_TRUE(d.process().WaitForLog("working_memory_released", std::chrono::minutes(2))) << d.process().log();
  const std::string released = d.Unix("GET", "/metrics").body;
  const std::string model = "tiny-q8_0";
  EXPECT_EQ(Metric(released, "llmd_working_memory_releases_total{model=\"" + model + "\"}"), 1) << released;
  EXPECT_EQ(Metric(released, MemorySeries(model, "kv", "resident")), 0) << released;
  EXPECT_EQ(Metric(released, MemorySeries(model, "compute", "reserved")), 0) << released;
  EXPECT_GT(Metric(released, MemorySeries(model, "weights", "resident")), 0) << released;
  // The native Stats reply (llmctl stats) says the same.
  auto stats = LlmClient(d.process().socket()).Stats();
  ASSERT_TRUE(stats.has_value());
  ASSERT_TRUE(stats->memory.has_value());
  EXPECT_EQ(stats->memory->working_memory_releases, 1u);
  EXPECT_EQ(stats->memory->kv_reserved_mib, 0u);
  EXPECT_EQ(stats->memory->compute_mib, 0u);
  EXPECT_GT(stats->memory->weights_resident_mib, 0u);
  EXPECT_GT(stats->memory->process_resident_mib, stats->memory->weights_resident_mib);

  const HttpReply second = d.Unix("POST", "/v1/chat/completions", body);
  ASSERT_EQ(second.status, 200) << second.body;
  const std::regex content(R"re("content":"((?:[^"\\]|\\.)*)")re");
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(first.body, a, content)) << first.body;
  ASSERT_TRUE(std::regex_search(second.body, b, content)) << second.body;
  EXPECT_EQ(b[1].str(), a[1].str());
  EXPECT_NE(second.body.find("\"cached_tokens\":0"), std::string::npos)
      << "the cache went with the release: " << second.body;
  const std::string after = d.Unix("GET", "/metrics").body;
  EXPECT_GT(Metric(after, MemorySeries(model, "kv", "resident")), 0) << after;
}

// The budget counts reserved bytes of every kind: a budget that holds the weights and the
// KV cache but not the compute scratch is refused, with numbers.
TEST(DaemonFootprint, TheMemoryBudgetCountsTheComputeScratch) {
  DaemonProcess probe;
  ASSERT_TRUE(probe.ready()) << probe.log();
  const std::string log = probe.log();
  std::smatch kv, compute;
  ASSERT_TRUE(std::regex_search(log, kv, std::regex("kv_cache_mib=([0-9]+)"))) << log;
  ASSERT_TRUE(std::regex_search(log, compute, std::regex("placement_device .* compute_mib=([0-9.]+)"))) << log;
  std::ifstream model(TinyModelPath(), std::ios::binary | std::ios::ate);
  const uint64_t file_bytes = static_cast<uint64_t>(model.tellg());
  const uint64_t kv_bytes = std::stoull(kv[1]) << 20;
  const double compute_mib = std::stod(compute[1]);
  ASSERT_GE(compute_mib, 2.0) << "the scratch must matter for this test";
  const uint64_t without_compute_mib = ((file_bytes + kv_bytes) >> 20) + 1;

  DaemonProcess tight({"--memory-budget-mb", std::to_string(without_compute_mib)});
  EXPECT_EQ(tight.WaitExit(std::chrono::seconds(120)), 1);
  EXPECT_NE(tight.log().find("compute scratch and checkpoints to"), std::string::npos) << tight.log();
  EXPECT_NE(tight.log().find("over the memory budget of " + std::to_string(without_compute_mib) + " MiB"),
            std::string::npos)
      << tight.log();

  DaemonProcess roomy({"--memory-budget-mb", std::to_string(without_compute_mib + static_cast<uint64_t>(compute_mib) + 2)});
  EXPECT_TRUE(roomy.ready()) << roomy.log();
}

}  // namespace
}  // namespace llmd::testing
