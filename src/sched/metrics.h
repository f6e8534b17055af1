// Serving metrics for the Prometheus endpoint: latency histograms and counters that the
// engine thread and the request handlers update, and their text exposition.
//
// Thread-safety: every method is thread-safe.
#ifndef LLMD_SCHED_METRICS_H_
#define LLMD_SCHED_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/request_class.h"

namespace llmd::sched {

// A Prometheus histogram with fixed upper bounds (seconds, say).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  // Appends the _bucket, _sum and _count lines of `name` with `labels` ("" or `model="x"`).
  void Render(const std::string& name, const std::string& labels, std::string* out) const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; guarded by mu_
  double sum_ = 0;                // guarded by mu_
  uint64_t count_ = 0;            // guarded by mu_
};

// What one model's engine worker measured since start.
struct WorkerMetrics {
  WorkerMetrics();
  Histogram ttft_seconds;         // request submitted to first token
  Histogram inter_token_seconds;  // between consecutive tokens of one stream
  std::atomic<uint64_t> prompt_tokens{0}, cached_tokens{0}, generated_tokens{0};
  std::atomic<uint64_t> draft_tokens{0}, accepted_draft_tokens{0};  // speculative decoding
  std::array<std::atomic<uint64_t>, kRequestClasses> admitted_by_class{};  // jobs given a slot, by class
};

// Finished requests by API ("native", "openai", "responses", "anthropic", "ollama") and outcome ("ok", "invalid", "busy", ...).
class RequestCounters {
 public:
  void Count(const std::string& api, const std::string& outcome);
  void Render(std::string* out) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;  // guarded by mu_
};

// Prometheus label value escaping (backslash, quote, newline).
std::string EscapeLabelValue(const std::string& value);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_METRICS_H_
