// The fetch URL policy, with libcurl's own URL parser, so the host the policy judges is the
// host the transfer connects to.
// Thread-safety: pure functions (a CURLU handle per call).
#include "fetch/url_policy.h"

#include <curl/curl.h>

#include <memory>

namespace llmd::fetch {
namespace {

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

// One part of a parsed URL; "" when it is absent.
std::string Part(CURLU* u, CURLUPart part) {
  char* value = nullptr;
  if (curl_url_get(u, part, &value, 0) != CURLUE_OK || value == nullptr) return "";
  std::string out(value);
  curl_free(value);
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

bool IsLoopbackHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string h = Lower(host);
  return h == "127.0.0.1" || h == "::1" || h == "localhost";
}

Result<UrlParts> CheckFetchUrl(std::string_view url) {
  const std::string text(url);
  auto refuse = [&](std::string_view why) {
    return InvalidArgumentError("refusing to fetch '" + text + "': " + std::string(why));
  };
  UrlHandle u(curl_url());
  if (!u) return InternalError("curl_url: out of memory");
  // No scheme guessing: "example.com/x" is not silently http.
  if (curl_url_set(u.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) {
    return refuse("not a valid absolute URL");
  }
  UrlParts parts;
  parts.scheme = Lower(Part(u.get(), CURLUPART_SCHEME));
  parts.host = Part(u.get(), CURLUPART_HOST);
  parts.path = Part(u.get(), CURLUPART_PATH);
  if (parts.host.size() >= 2 && parts.host.front() == '[') {
    parts.host = parts.host.substr(1, parts.host.size() - 2);
  }
  if (parts.host.empty()) return refuse("no host");
  if (!Part(u.get(), CURLUPART_USER).empty()) {
    return refuse("credentials in the URL are not accepted");
  }
  if (parts.scheme == "https") return parts;
  if (parts.scheme == "http") {
    if (IsLoopbackHost(parts.host)) return parts;
    return refuse("plain http is allowed only to a loopback host (127.0.0.1, ::1, localhost)");
  }
  return refuse("only https URLs are fetched (scheme '" + parts.scheme + "')");
}

}  // namespace llmd::fetch
