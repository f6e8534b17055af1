#include "common/handler_threads.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <vector>

namespace llmd {

HandlerThreads::HandlerThreads(size_t cap) : cap_(cap), done_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

HandlerThreads::~HandlerThreads() {
  JoinAll();
  if (done_fd_ >= 0) ::close(done_fd_);
}

bool HandlerThreads::TryStart(std::function<void()> handler) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ >= cap_) return false;
  ++running_;
  entries_.emplace_back();
  Entry* entry = &entries_.back();  // list: stable while the thread runs
  entry->thread = std::thread([this, entry, handler = std::move(handler)] {
    handler();
    std::lock_guard<std::mutex> done(mu_);
    entry->finished = true;
    --running_;
    uint64_t one = 1;
    (void)!::write(done_fd_, &one, sizeof one);
    cv_.notify_all();
  });
  return true;
}

size_t HandlerThreads::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void HandlerThreads::Reap() {
  uint64_t n;
  (void)!::read(done_fd_, &n, sizeof n);
  std::vector<std::thread> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (!it->finished) {
        ++it;
        continue;
      }
      done.push_back(std::move(it->thread));
      it = entries_.erase(it);
    }
  }
  for (auto& t : done) t.join();  // each has returned: joins at once
}

void HandlerThreads::JoinAll() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return running_ == 0; });
  }
  Reap();
}

}  // namespace llmd
