// PullRegistry: flights keyed by destination, one download thread each, waiters on one
// condition variable (pulls are few; a wake-up for another flight's progress is cheap).
// Thread-safety: every member behind mu_, except the flights' stop flags (atomic).
#include "fetch/pull_registry.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>

#include "fetch/sha256.h"

namespace llmd::fetch {

struct PullRegistry::Flight {
  std::string key;
  DownloadRequest request;
  std::atomic<bool> stop{false};  // every waiter left, or the registry is closing
  // Guarded by the registry's mu_:
  size_t waiters = 0;
  Progress progress;
  uint64_t progress_seq = 0;  // bumped on each progress report
  std::optional<Result<DownloadResult>> result;
};

namespace {

// The destination's identity: "dir" and "dir/" and "./dir" are the same directory.
std::string KeyOf(const DownloadRequest& r) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(r.directory, ec);
  if (ec) dir = std::filesystem::path(r.directory).lexically_normal();
  return (dir / r.file_name).string();
}

std::string DigestOf(const std::string& sha) {
  Result<std::string> n = NormalizeSha256(sha);
  return n.has_value() ? *n : sha;
}

}  // namespace

PullRegistry::PullRegistry(DownloadOptions options, size_t max_downloads)
    : options_(std::move(options)), threads_(max_downloads) {}

PullRegistry::~PullRegistry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, flight] : flights_) flight->stop = true;
  }
  threads_.JoinAll();
}

size_t PullRegistry::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flights_.size();
}

Result<DownloadResult> PullRegistry::Pull(const DownloadRequest& request,
                                          const ProgressFn& progress,
                                          const std::atomic<bool>* cancel) {
  threads_.Reap();  // finished download threads
  const std::string key = KeyOf(request);
  std::unique_lock<std::mutex> lock(mu_);
  LLMD_ASSIGN_OR_RETURN(std::shared_ptr<Flight> flight, JoinOrStart(lock, key, request));
  return Wait(lock, *flight, progress, cancel);
}

Result<std::shared_ptr<PullRegistry::Flight>> PullRegistry::JoinOrStart(
    std::unique_lock<std::mutex>& lock, const std::string& key, const DownloadRequest& request) {
  for (;;) {
    auto it = flights_.find(key);
    if (it == flights_.end()) break;
    std::shared_ptr<Flight> f = it->second;
    if (!f->stop) {
      if (f->request.url != request.url ||
          DigestOf(f->request.sha256) != DigestOf(request.sha256)) {
        return UnavailableError(key + " is being pulled from " + f->request.url + " (sha256 '" +
                                f->request.sha256 + "') already");
      }
      ++f->waiters;
      return f;
    }
    cv_.wait(lock);  // abandoned: its thread removes it when the download has stopped
  }
  auto f = std::make_shared<Flight>();
  f->key = key;
  f->request = request;
  f->waiters = 1;
  flights_[key] = f;
  if (!threads_.TryStart([this, f] { Run(f); })) {
    flights_.erase(key);
    return ResourceExhaustedError("too many model downloads at once; " + key + " not started");
  }
  return f;
}

void PullRegistry::Run(const std::shared_ptr<Flight>& f) {
  auto report = [this, f](const Progress& p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      f->progress = p;
      ++f->progress_seq;
    }
    cv_.notify_all();
    return !f->stop.load();
  };
  Result<DownloadResult> r = Download(f->request, options_, report, &f->stop);
  {
    std::lock_guard<std::mutex> lock(mu_);
    f->result = std::move(r);
    auto it = flights_.find(f->key);
    if (it != flights_.end() && it->second == f) flights_.erase(it);
  }
  cv_.notify_all();
}

Result<DownloadResult> PullRegistry::Wait(std::unique_lock<std::mutex>& lock, Flight& f,
                                          const ProgressFn& progress,
                                          const std::atomic<bool>* cancel) {
  uint64_t seen = 0;
  auto leave = [&f] {
    if (--f.waiters == 0 && !f.result) f.stop = true;  // nobody wants it any more
  };
  for (;;) {
    if (f.progress_seq != seen) {
      seen = f.progress_seq;
      const Progress p = f.progress;
      lock.unlock();
      const bool go = !progress || progress(p);
      lock.lock();
      if (!go) {
        leave();
        return CancelledError(f.key + ": pull cancelled");
      }
      continue;  // more progress may have come meanwhile
    }
    if (f.result) {
      --f.waiters;
      return *f.result;
    }
    if (cancel != nullptr && cancel->load()) {
      leave();
      return CancelledError(f.key + ": pull cancelled");
    }
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

}  // namespace llmd::fetch
