// The Content-Range header of a 206 or 416 reply (RFC 9110 14.4): "bytes first-last/complete"
// or "bytes */complete", where complete may be "*" (unknown). A resumed download trusts the
// reply only when this says it starts where the partial file ends.
//
// Thread-safety: pure functions.
#ifndef LLMD_FETCH_CONTENT_RANGE_H_
#define LLMD_FETCH_CONTENT_RANGE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace llmd::fetch {

struct ContentRange {
  bool has_range = false;  // false for "bytes */N"
  uint64_t first = 0;      // inclusive
  uint64_t last = 0;       // inclusive
  int64_t complete = -1;   // the whole file's length; -1: "*"
};

// nullopt for anything malformed: another unit, last < first, last >= complete, no digits,
// digits past 2^63, stray characters.
std::optional<ContentRange> ParseContentRange(std::string_view value);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_CONTENT_RANGE_H_
