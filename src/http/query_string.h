// The query string of a request target ("a=1&b=x%20y"), parsed once by the HTTP server so that
// routes read names and values, never raw bytes: split on '&', each part "name=value" or
// "name" (value ""), '+' a space and %XX a byte in both (application/x-www-form-urlencoded, as
// browsers and the clients' URL builders write them). Empty parts ("a=1&&b=2", a trailing '&')
// are skipped. Refused, with what and where: a '%' not followed by two hex digits, a name or
// value that is not UTF-8 once decoded or holds a control character (NUL included), an empty
// name, more than kMaxQueryParams parts. The target itself is bounded by the header limit.
//
// Routes that take no parameters do not look at it; a route that does says which names it
// knows and ignores others, as the JSON APIs ignore unknown body fields.
//
// Thread-safety: pure functions; QueryParams is a value.
#ifndef LLMD_HTTP_QUERY_STRING_H_
#define LLMD_HTTP_QUERY_STRING_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::http {

inline constexpr size_t kMaxQueryParams = 64;

struct QueryParam {
  std::string name;
  std::string value;
  friend bool operator==(const QueryParam&, const QueryParam&) = default;
};

// In the order the target has them; a name may repeat (include[]=a&include[]=b).
using QueryParams = std::vector<QueryParam>;

// `raw`: what follows the first '?' of the target, without it ("" when there is none).
// InvalidArgument naming the fault when it is malformed.
Result<QueryParams> ParseQueryString(std::string_view raw);

// Every value given for `name`, in order.
std::vector<std::string> QueryValues(const QueryParams& query, std::string_view name);

}  // namespace llmd::http

#endif  // LLMD_HTTP_QUERY_STRING_H_
