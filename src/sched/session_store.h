// SessionStore: the chat sessions a worker keeps (the native Chat request's history), least
// recently used dropped first beyond its capacity. A session is the exact tokens fed and
// generated so far, so the next turn's prompt extends them and reuses their memory.
//
// Thread-safety: every method is thread-safe (its own lock, never held across engine work).
#ifndef LLMD_SCHED_SESSION_STORE_H_
#define LLMD_SCHED_SESSION_STORE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/types.h"

namespace llmd::sched {

struct StoredSession {
  std::string system;
  std::vector<engine::TokenId> tokens;  // every token fed and generated so far
  // Where each turn's user message starts in `tokens`, ascending; tokens before the first are
  // the system prompt (and any history saved without turns), never dropped. A turn whose start
  // could not be told is part of the turn before it.
  std::vector<uint32_t> turn_starts;
};

class SessionStore {
 public:
  explicit SessionStore(size_t capacity) : capacity_(capacity) {}

  std::optional<StoredSession> Get(const std::string& name) const;
  // A finished turn: the session becomes the most recently used.
  void Record(const std::string& name, StoredSession session);
  // A session restored from disk, not yet used: the first to go if room is short.
  void Restore(const std::string& name, StoredSession session);
  bool Erase(const std::string& name);
  size_t size() const;

 private:
  struct Entry {
    StoredSession session;
    int64_t last_used = 0;
  };
  void Put(const std::string& name, StoredSession session, int64_t last_used);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> sessions_;  // guarded by mu_
  int64_t use_counter_ = 0;                // guarded by mu_
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_SESSION_STORE_H_
