// The /metrics page: Prometheus text exposition (version 0.0.4) of the request counters and
// every loaded model's token counters, latency histograms and gauges.
#ifndef LLMD_HTTP_METRICS_PAGE_H_
#define LLMD_HTTP_METRICS_PAGE_H_

#include <string>

#include "sched/server_state.h"

namespace llmd::http {

// Thread-safe. Before the models are ready only the request counters are shown.
std::string RenderMetricsPage(sched::ServerState& ctx);

}  // namespace llmd::http

#endif  // LLMD_HTTP_METRICS_PAGE_H_
