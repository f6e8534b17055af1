// Durations as people write them: "300" (seconds), "1.5", "90s", "500ms", "5m", "1h30m",
// and negative ones ("-1", "-1m"), as Ollama's keep_alive and llmd's idle settings take them.
#ifndef LLMD_COMMON_DURATION_H_
#define LLMD_COMMON_DURATION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd {

// Milliseconds, rounded down. A bare number is seconds; otherwise one or more number+unit
// parts (ms, s, m, h) with one optional leading sign. InvalidArgument says what is wrong.
Result<int64_t> ParseDurationMs(std::string_view text);

// "5m", "90s", "1h30m", "250ms", "0": the shortest spelling ParseDurationMs reads back.
std::string FormatDurationMs(int64_t ms);

}  // namespace llmd

#endif  // LLMD_COMMON_DURATION_H_
