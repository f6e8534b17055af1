#include "sched/session_store.h"

#include <algorithm>
#include <utility>

namespace llmd::sched {

std::optional<StoredSession> SessionStore::Get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(name);
  if (it == sessions_.end()) return std::nullopt;
  return it->second.session;
}

void SessionStore::Record(const std::string& name, StoredSession session) {
  std::lock_guard<std::mutex> lock(mu_);
  Put(name, std::move(session), ++use_counter_);
}

void SessionStore::Restore(const std::string& name, StoredSession session) {
  std::lock_guard<std::mutex> lock(mu_);
  Put(name, std::move(session), 0);
}

void SessionStore::Put(const std::string& name, StoredSession session, int64_t last_used) {
  sessions_[name] = Entry{std::move(session), last_used};
  // The one just put stays, even a restored one that no turn has used yet.
  while (sessions_.size() > std::max<size_t>(capacity_, 1)) {
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->first != name && (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used)) {
        oldest = it;
      }
    }
    sessions_.erase(oldest);
  }
}

bool SessionStore::Erase(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.erase(name) > 0;
}

size_t SessionStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace llmd::sched
