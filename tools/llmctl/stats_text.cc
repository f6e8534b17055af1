#include "tools/llmctl/stats_text.h"

#include <cstdio>

namespace llmd::llmctl {

std::optional<double> DraftAcceptanceRate(uint64_t drafted, uint64_t accepted) {
  if (drafted == 0) return std::nullopt;
  return static_cast<double>(accepted) / static_cast<double>(drafted);
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

}  // namespace llmd::llmctl
