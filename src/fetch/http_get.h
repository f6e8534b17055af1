// One HTTP GET through libcurl's easy interface: the only code in llmd that talks to a remote
// server. The URL must pass the fetch policy (url_policy.h); redirects are followed, but only
// to https; there is a connect timeout and a low-speed limit, never a total timeout (a 40 GB
// model may take hours, and a stalled one is stopped by the low-speed limit). TLS is libcurl's,
// with certificate checks on.
//
// Thread-safety: RunGet may run on many threads at once, one transfer each (libcurl's global
// setup is done once, under std::call_once); a GetHandler's methods are called on the thread
// that called RunGet, one at a time.
#ifndef LLMD_FETCH_HTTP_GET_H_
#define LLMD_FETCH_HTTP_GET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::fetch {

struct TransferLimits {
  long connect_timeout_ms = 30'000;
  // The transfer stops when it moves fewer than low_speed_bytes a second for
  // low_speed_seconds in a row: a stalled server, not a slow link.
  long low_speed_bytes = 1024;
  long low_speed_seconds = 60;
  long max_redirects = 10;
  std::string user_agent = "llmd";
};

// The final reply's status and the headers a download needs (those of a followed redirect are
// dropped as the next reply starts).
struct ResponseHead {
  long status = 0;
  int64_t content_length = -1;  // -1: no Content-Length (chunked, or closed-delimited)
  std::string content_range;    // the raw value; "" when absent
};

// What a transfer calls back. An error from OnHead or OnBody stops the transfer, and RunGet
// returns that error as it is.
class GetHandler {
 public:
  virtual ~GetHandler() = default;
  // Once, with the final reply's head: before its first body byte, or at the end when the
  // reply has no body.
  virtual Status OnHead(const ResponseHead& head) = 0;
  // Body bytes, in order, after OnHead.
  virtual Status OnBody(std::string_view bytes) = 0;
  // Polled while the transfer runs (at least once a second, also while no byte flows); false
  // stops it, and RunGet returns Cancelled.
  virtual bool KeepGoing() = 0;
};

// GETs `url`, with "Range: bytes=<range_from>-" when range_from > 0 (kept across redirects).
// Errors: InvalidArgument for a URL or redirect the policy refuses; Cancelled when KeepGoing
// said stop; Unavailable for network failures (refused, reset, timed out, TLS, a connection
// closed before the announced length), naming the URL and libcurl's reason; otherwise the
// handler's own error.
Status RunGet(std::string_view url, uint64_t range_from, const TransferLimits& limits,
              GetHandler& handler);

// The error for a reply status a caller does not accept: NotFound for 404 and 410,
// Unavailable otherwise; the message names the status and the URL.
Status HttpStatusError(long status, std::string_view url);

// GETs a small document (a hub listing) into memory: a 200 reply of at most `max_bytes`.
Result<std::string> FetchToMemory(std::string_view url, size_t max_bytes,
                                  const TransferLimits& limits);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_HTTP_GET_H_
