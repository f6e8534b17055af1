// ResponseStore: the Responses API's stored responses (store: true), for GET and DELETE
// /v1/responses/{id} and for a follow-up's previous_response_id. Each keeps the Response
// object as GET returns it and the conversation as Responses items (the previous response's
// items, this request's input, this response's output), so a follow-up is its stored items
// then its new input, which render to the same prompt tokens: the prompt cache reuses them.
//
// A stored response belongs to its owner (response_owner.h); any other owner is told it does
// not exist, exactly as for an id never stored. Limits: at most `max_responses` and
// `max_bytes` (the least recently used go first), each for `ttl_ms` from its creation. With a
// `dir`, each is also a file <dir>/<id>.json (mode 0600, written atomically), loaded at
// construction: a stored response survives a restart as saved sessions do. A file that cannot
// be read back is skipped with a log line and left alone.
//
// Thread-safety: every method is thread-safe (one lock; file writes happen under it, so a
// DELETE never races the write of the same id).
#ifndef LLMD_HTTP_RESPONSES_RESPONSE_STORE_H_
#define LLMD_HTTP_RESPONSES_RESPONSE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "llmd/result.h"

namespace llmd::http {

struct StoredResponse {
  std::string id;             // "resp_..."; also its file's name
  std::string owner;          // ResponseOwner: who may read it
  int64_t created_at_ms = 0;  // Unix milliseconds; the TTL counts from here
  std::string response_json;  // the Response object, as GET returns it
  std::string items_json;     // the conversation as a JSON array of Responses items

  // What it costs to keep (the limits and /metrics count this).
  uint64_t bytes() const { return id.size() + owner.size() + response_json.size() + items_json.size(); }
};

struct ResponseStoreOptions {
  size_t max_responses = 1000;         // 0: storing is off
  uint64_t max_bytes = 256ull << 20;   // all stored responses together
  int64_t ttl_ms = 7LL * 24 * 3600 * 1000;  // from creation; > 0
  std::string dir;                     // "": memory only
  std::function<int64_t()> now_ms;     // Unix milliseconds; null: the system clock
};

class ResponseStore {
 public:
  explicit ResponseStore(ResponseStoreOptions options);

  // Whether responses are stored at all (max_responses > 0).
  bool enabled() const { return options_.max_responses > 0; }
  const ResponseStoreOptions& options() const { return options_; }

  // Keeps `response` (the most recently used), dropping the least recently used beyond the
  // limits. InvalidArgument: its id cannot be a file name, or it alone is over max_bytes.
  // A file that cannot be written is an error too; the response is then kept in memory only.
  Status Put(StoredResponse response);
  // The response `id` when `owner` owns it and it has not expired; it becomes the most
  // recently used. Anyone else gets nothing, as for an id never stored.
  std::optional<StoredResponse> Get(const std::string& id, const std::string& owner);
  // Deletes the response `id` (and its file) when `owner` owns it; false otherwise.
  bool Erase(const std::string& id, const std::string& owner);

  struct Totals {
    size_t count = 0;
    uint64_t bytes = 0;
  };
  // What is stored now (expired responses dropped first).
  Totals totals();

 private:
  struct Entry {
    StoredResponse response;
    int64_t last_used = 0;
  };
  int64_t Now() const;
  std::string PathOf(const std::string& id) const;
  void Load();
  void DropLocked(std::map<std::string, Entry>::iterator it);
  void DropExpiredLocked();
  // Drops the least recently used until the limits hold, never `keep`.
  void EnforceLimitsLocked(const std::string& keep);

  const ResponseStoreOptions options_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by id; guarded by mu_
  uint64_t bytes_ = 0;                    // guarded by mu_
  int64_t use_counter_ = 0;               // guarded by mu_
};

// Response ids as file names: "resp_" and 1..64 characters of [A-Za-z0-9_-] in all.
bool IsValidResponseId(const std::string& id);

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSE_STORE_H_
