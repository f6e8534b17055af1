// RunGet over libcurl's easy interface. The header callback keeps only the current reply's
// head (each status line starts a new one), so what the handler sees is the final reply's
// after redirects; the head is handed over with the first body byte, when every header of
// that reply is in.
// Thread-safety: one easy handle per RunGet call; libcurl's global init once (http_get.h).
#include "fetch/http_get.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "fetch/url_policy.h"

namespace llmd::fetch {
namespace {

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct TransferState {
  GetHandler* handler = nullptr;
  ResponseHead head;
  bool head_delivered = false;
  bool cancelled = false;
  Status error;  // the handler's first error
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// "HTTP/1.1 206 Partial Content" or "HTTP/2 200": the three digits after the first space.
long StatusOf(std::string_view line) {
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos || line.size() < sp + 4) return 0;
  long code = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (line[i] < '0' || line[i] > '9') return 0;
    code = code * 10 + (line[i] - '0');
  }
  return code;
}

// A Content-Length we can trust: digits only, below 2^62.
int64_t ParseLength(std::string_view v) {
  if (v.empty() || v.size() > 18) return -1;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

size_t OnHeaderLine(char* data, size_t size, size_t count, void* user) {
  auto* st = static_cast<TransferState*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    st->head = ResponseHead{};
    st->head.status = StatusOf(line);
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string_view name = line.substr(0, colon);
  std::string_view value = Trim(line.substr(colon + 1));
  if (EqualsIgnoreCase(name, "content-length")) st->head.content_length = ParseLength(value);
  if (EqualsIgnoreCase(name, "content-range")) st->head.content_range = std::string(value);
  return n;
}

bool DeliverHead(TransferState* st) {
  if (st->head_delivered) return true;
  st->head_delivered = true;
  st->error = st->handler->OnHead(st->head);
  return st->error.ok();
}

size_t OnBodyBytes(char* data, size_t size, size_t count, void* user) {
  auto* st = static_cast<TransferState*>(user);
  const size_t n = size * count;
  if (!DeliverHead(st)) return 0;  // any short count makes libcurl stop with a write error
  if (n == 0) return 0;
  st->error = st->handler->OnBody(std::string_view(data, n));
  return st->error.ok() ? n : 0;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<TransferState*>(user);
  if (st->handler->KeepGoing()) return 0;
  st->cancelled = true;
  return 1;
}

void SetOptions(CURL* c, const std::string& url, uint64_t range_from, bool loopback,
                const TransferLimits& limits, TransferState* st, char* errbuf) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  // http at all only for the loopback URL the policy passed; a redirect only to https.
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string forms; the bitmasks are deprecated
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, limits.max_redirects);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, limits.connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, limits.low_speed_bytes);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, limits.low_speed_seconds);
  curl_easy_setopt(c, CURLOPT_USERAGENT, limits.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  // A proxy from the environment never sits between us and a loopback server.
  if (loopback) curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  if (range_from > 0) {
    const std::string range = std::to_string(range_from) + "-";
    curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());  // libcurl copies option strings
  }
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &OnHeaderLine);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, st);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &OnBodyBytes);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, st);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, st);
}

Status TransferError(CURL* c, CURLcode rc, const std::string& url, const char* errbuf) {
  const std::string why = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  if (rc == CURLE_UNSUPPORTED_PROTOCOL) {
    char* where = nullptr;
    curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &where);
    return InvalidArgumentError(
        "refusing to fetch '" + url + "': it redirects to a URL that is not https (" +
        (where != nullptr ? std::string(where) : std::string("?")) + "): " + why);
  }
  return UnavailableError("fetching " + url + ": " + why);
}

}  // namespace

Status RunGet(std::string_view url, uint64_t range_from, const TransferLimits& limits,
              GetHandler& handler) {
  LLMD_ASSIGN_OR_RETURN(UrlParts parts, CheckFetchUrl(url));
  GlobalInitOnce();
  std::unique_ptr<CURL, EasyDeleter> c(curl_easy_init());
  if (!c) return InternalError("curl_easy_init failed");
  const std::string u(url);
  TransferState st;
  st.handler = &handler;
  char errbuf[CURL_ERROR_SIZE] = {};
  SetOptions(c.get(), u, range_from, IsLoopbackHost(parts.host), limits, &st, errbuf);
  const CURLcode rc = curl_easy_perform(c.get());
  if (!st.error.ok()) return st.error;
  if (st.cancelled) return CancelledError("fetching " + u + ": cancelled");
  if (rc != CURLE_OK) return TransferError(c.get(), rc, u, errbuf);
  if (!DeliverHead(&st)) return st.error;  // a reply without a body
  return Status::Ok();
}

Status HttpStatusError(long status, std::string_view url) {
  std::string msg = "HTTP " + std::to_string(status) + " from " + std::string(url);
  if (status == 404 || status == 410) return NotFoundError(std::move(msg));
  if (status == 401 || status == 403) {
    msg += " (a gated or private repository needs a token, which llmd does not send yet)";
  }
  return UnavailableError(std::move(msg));
}

namespace {

class MemoryHandler final : public GetHandler {
 public:
  MemoryHandler(std::string_view url, size_t max_bytes) : url_(url), max_bytes_(max_bytes) {}
  Status OnHead(const ResponseHead& head) override {
    if (head.status != 200) return HttpStatusError(head.status, url_);
    if (head.content_length > static_cast<int64_t>(max_bytes_)) return TooBig();
    return Status::Ok();
  }
  Status OnBody(std::string_view bytes) override {
    if (bytes.size() > max_bytes_ - body_.size()) return TooBig();
    body_.append(bytes);
    return Status::Ok();
  }
  bool KeepGoing() override { return true; }
  std::string& body() { return body_; }

 private:
  Status TooBig() const {
    return ResourceExhaustedError(url_ + ": reply larger than " + std::to_string(max_bytes_) +
                                  " bytes");
  }
  std::string url_;
  size_t max_bytes_;
  std::string body_;
};

}  // namespace

Result<std::string> FetchToMemory(std::string_view url, size_t max_bytes,
                                  const TransferLimits& limits) {
  MemoryHandler h(url, max_bytes);
  LLMD_RETURN_IF_ERROR(RunGet(url, 0, limits, h));
  return std::move(h.body());
}

}  // namespace llmd::fetch
