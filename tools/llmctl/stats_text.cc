#include "tools/llmctl/stats_text.h"

#include <cstdio>

namespace llmd::llmctl {

std::optional<double> DraftAcceptanceRate(uint64_t drafted, uint64_t accepted) {
  if (drafted == 0) return std::nullopt;
  return static_cast<double>(accepted) / static_cast<double>(drafted);
}

std::string DroppedLine(uint64_t turns, uint64_t tokens) {
  return "dropped the oldest " + std::to_string(turns) + (turns == 1 ? " turn (" : " turns (") +
         std::to_string(tokens) + " tokens) to fit the context";
}

std::string DraftLine(uint64_t drafted, uint64_t accepted) {
  std::string rate = "-";
  if (auto r = DraftAcceptanceRate(drafted, accepted)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", *r * 100);
    rate = buf;
  }
  return "speculative: " + std::to_string(drafted) + " drafted, " + std::to_string(accepted) + " accepted (" + rate +
         ")";
}

std::string ClientTable(const std::vector<ServerStats::Client>& clients) {
  if (clients.empty()) return "no client has sent a request yet\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %-12s %8s %8s %11s %10s %9s %8s %8s %9s %9s\n", "uid", "class", "requests",
                "refused", "over budget", "queue ms", "ttft ms", "prompt", "cached", "generated", "preempted");
  std::string out = line;
  for (const ServerStats::Client& c : clients) {
    std::snprintf(line, sizeof line, "%-8s %-12s %8u %8u %11u %10.1f %9.1f %8u %8u %9u %9u\n", c.uid.c_str(),
                  c.request_class.c_str(), c.requests, c.refused(), c.refused_budget, c.queue_wait_ms, c.ttft_ms,
                  c.prompt_tokens, c.cached_tokens, c.generated_tokens, c.preemptions);
    out += line;
  }
  return out;
}

}  // namespace llmd::llmctl
