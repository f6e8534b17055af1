#include "sched/metrics.h"

#include <algorithm>
#include <cstdio>

namespace llmd::sched {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string WithLabel(const std::string& labels, const std::string& extra) {
  if (labels.empty()) return "{" + extra + "}";
  return "{" + labels + "," + extra + "}";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(const std::string& name, const std::string& labels, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    *out += name + "_bucket" + WithLabel(labels, "le=\"" + Number(bounds_[i]) + "\"") + " " +
            std::to_string(cumulative) + "\n";
  }
  *out += name + "_bucket" + WithLabel(labels, "le=\"+Inf\"") + " " + std::to_string(count_) + "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  *out += name + "_sum" + braces + " " + Number(sum_) + "\n";
  *out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

WorkerMetrics::WorkerMetrics()
    : ttft_seconds({0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token_seconds({0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28}) {}

void RequestCounters::Count(const std::string& api, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{api, outcome}];
}

void RequestCounters::Render(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, n] : counts_) {
    *out += "llmd_requests_total{api=\"" + EscapeLabelValue(key.first) + "\",outcome=\"" +
            EscapeLabelValue(key.second) + "\"} " + std::to_string(n) + "\n";
  }
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace llmd::sched
