#include "daemon/client_rows.h"

#include <algorithm>
#include <cstdint>

namespace llmd::daemon {
namespace {

uint32_t U32(uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); }

// A mean of `count` samples summing to `sum`; 0 with none (the wire has no "none").
float Mean(double sum, uint64_t count) { return count == 0 ? 0.0f : static_cast<float>(sum / static_cast<double>(count)); }

}  // namespace

std::vector<proto::ClientStats> ClientRows(const std::vector<sched::ClientRow>& rows) {
  std::vector<proto::ClientStats> out;
  out.reserve(rows.size());
  for (const sched::ClientRow& row : rows) {
    const sched::ClientCounters& c = row.counters;
    auto refused = [&](sched::Refusal r) { return U32(c.refusals[static_cast<size_t>(r)]); };
    out.push_back({.uid = row.uid,
                   .request_class = static_cast<uint8_t>(ClassIndex(row.request_class)),
                   .requests = U32(c.requests),
                   .refused_budget = refused(sched::Refusal::kBudget),
                   .refused_queue_full = refused(sched::Refusal::kQueueFull),
                   .refused_busy = refused(sched::Refusal::kBusy),
                   .refused_deadline = refused(sched::Refusal::kDeadline),
                   .queue_wait_ms = Mean(c.queue_wait_ms_sum, c.queue_waits),
                   .ttft_ms = Mean(c.ttft_ms_sum, c.ttfts),
                   .prompt_tokens = U32(c.prompt_tokens),
                   .cached_tokens = U32(c.cached_tokens),
                   .generated_tokens = U32(c.generated_tokens),
                   .preemptions = U32(c.preemptions)});
  }
  return out;
}

}  // namespace llmd::daemon
