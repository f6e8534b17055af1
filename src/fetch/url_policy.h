// Which URLs llmd may fetch a model from: https anywhere, plain http only to a loopback host
// (127.0.0.1, ::1, localhost: the tests' servers, a local mirror). Everything else, and any
// URL that does not parse, is refused with an error that says why. Redirects are held to
// https by the transfer itself (http_get.cc), so a server cannot downgrade a download.
//
// Thread-safety: pure functions.
#ifndef LLMD_FETCH_URL_POLICY_H_
#define LLMD_FETCH_URL_POLICY_H_

#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::fetch {

struct UrlParts {
  std::string scheme;  // lowercase: "https" or "http"
  std::string host;    // as written; an IPv6 literal without brackets ("::1")
  std::string path;    // "/..." (percent-encoded as given), without the query
};

// True for "127.0.0.1", "::1" (bracketed or not) and "localhost" (any case).
bool IsLoopbackHost(std::string_view host);

// Parses `url` (libcurl's URL parser: the transfer sees it the same way) and applies the
// policy. InvalidArgument names the URL and the rule it breaks.
Result<UrlParts> CheckFetchUrl(std::string_view url);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_URL_POLICY_H_
