// How llmctl words the daemon's counters.
#ifndef LLMD_TOOLS_LLMCTL_STATS_TEXT_H_
#define LLMD_TOOLS_LLMCTL_STATS_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llmd/client.h"

namespace llmd::llmctl {

// Accepted draft tokens / drafted ones (speculative decoding); nullopt when nothing was
// drafted, where a rate would be 0/0 rather than a poor drafter.
std::optional<double> DraftAcceptanceRate(uint64_t drafted, uint64_t accepted);

// "speculative: 120 drafted, 84 accepted (70.0%)"; the rate is "-" when nothing was drafted.
std::string DraftLine(uint64_t drafted, uint64_t accepted);

// What a chat turn under --overflow drop_oldest dropped to fit the context:
// "dropped the oldest 2 turns (310 tokens) to fit the context" ("1 turn" for one).
std::string DroppedLine(uint64_t turns, uint64_t tokens);

// `stats --by-client`: one line per peer UID and class, under a header: requests, refusals (all,
// and those over the token budget), mean queue wait and TTFT (ms), tokens, preemptions.
std::string ClientTable(const std::vector<ServerStats::Client>& clients);

}  // namespace llmd::llmctl

#endif  // LLMD_TOOLS_LLMCTL_STATS_TEXT_H_
