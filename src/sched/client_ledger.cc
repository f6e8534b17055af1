#include "sched/client_ledger.h"

#include <algorithm>
#include <numeric>

namespace llmd::sched {

const char* RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kBudget: return "budget";
    case Refusal::kQueueFull: return "queue_full";
    case Refusal::kBusy: return "busy";
    case Refusal::kDeadline: return "deadline";
  }
  return "busy";
}

uint64_t ClientCounters::refused() const { return std::accumulate(refusals.begin(), refusals.end(), uint64_t{0}); }

ClientLedger::Key ClientLedger::KeyOf(const ClientId& client) {
  if (!client.uid) return {kUnknown, client.request_class};
  if (named_.contains(*client.uid)) return {*client.uid, client.request_class};
  if (named_.size() < kMaxNamedUids) {
    named_.insert(*client.uid);
    return {*client.uid, client.request_class};
  }
  return {kOther, client.request_class};
}

void ClientLedger::CountRequest(const ClientId& client) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_[KeyOf(client)].requests;
}

void ClientLedger::CountRefusal(const ClientId& client, Refusal why) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_[KeyOf(client)].refusals[static_cast<size_t>(why)];
}

void ClientLedger::CountRun(const ClientId& client, const engine::GenerationStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  ClientCounters& c = counters_[KeyOf(client)];
  // A cancelled request's times are those of no answer anyone got: its tokens count, not its wait.
  if (stats.finish_reason != engine::FinishReason::kCancelled) {
    c.queue_wait_ms_sum += stats.queue_ms;
    ++c.queue_waits;
    if (stats.generated_tokens > 0) {
      c.ttft_ms_sum += stats.ttft_ms;
      ++c.ttfts;
    }
  }
  c.prompt_tokens += static_cast<uint64_t>(std::max(0, stats.prompt_tokens));
  c.cached_tokens += static_cast<uint64_t>(std::max(0, stats.cached_tokens));
  c.generated_tokens += static_cast<uint64_t>(std::max(0, stats.generated_tokens));
  c.preemptions += static_cast<uint64_t>(std::max(0, stats.preemptions));
}

std::vector<ClientRow> ClientLedger::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ClientRow> rows;
  rows.reserve(counters_.size());
  for (const auto& [key, counters] : counters_) {
    const std::string uid = key.first == kOther ? "other" : key.first == kUnknown ? "unknown" : std::to_string(key.first);
    rows.push_back({uid, key.second, counters});
  }
  return rows;
}

}  // namespace llmd::sched
