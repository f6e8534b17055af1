// PullRegistry: single flight for model downloads in one process. Two pulls of the same
// destination (directory and file name) at once share one download: the second waits on the
// first, sees its progress and gets its result. Each download runs on a thread the registry
// owns (HandlerThreads: bounded, joined, never detached); each caller waits on its own thread
// and its progress callback runs there, so no callback runs under a lock or on a foreign
// thread.
//
// Leaving: a caller whose progress callback returns false, or whose cancel flag is raised
// (polled every 100 ms while it waits), stops waiting with Cancelled. The download itself
// stops when the last caller waiting on it has left; its partial file stays for the next pull.
// A pull of a destination whose abandoned download is still winding down waits for it to end,
// then starts a fresh one (which resumes the partial file).
//
// Thread-safety: every method is thread-safe. Lifetime: the destructor stops every download
// and joins its thread; no Pull may be running then.
#ifndef LLMD_FETCH_PULL_REGISTRY_H_
#define LLMD_FETCH_PULL_REGISTRY_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/handler_threads.h"
#include "fetch/download.h"

namespace llmd::fetch {

class PullRegistry {
 public:
  // Every download runs with `options`; at most `max_downloads` at once (more: ResourceExhausted).
  explicit PullRegistry(DownloadOptions options, size_t max_downloads = 4);
  ~PullRegistry();
  PullRegistry(const PullRegistry&) = delete;
  PullRegistry& operator=(const PullRegistry&) = delete;

  // Downloads `request`, or joins the running download of the same destination. Joining one
  // from another URL or with another sha256 is refused (Unavailable, naming it).
  Result<DownloadResult> Pull(const DownloadRequest& request, const ProgressFn& progress = nullptr,
                              const std::atomic<bool>* cancel = nullptr);

  // Downloads running or winding down.
  size_t active() const;

 private:
  struct Flight;
  // The flight for `key` to join, or a new one; waits out an abandoned one. Holds mu_.
  Result<std::shared_ptr<Flight>> JoinOrStart(std::unique_lock<std::mutex>& lock,
                                              const std::string& key,
                                              const DownloadRequest& request);
  void Run(const std::shared_ptr<Flight>& flight);
  Result<DownloadResult> Wait(std::unique_lock<std::mutex>& lock, Flight& flight,
                              const ProgressFn& progress, const std::atomic<bool>* cancel);

  const DownloadOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a flight's progress, its end, its removal
  std::map<std::string, std::shared_ptr<Flight>> flights_;  // guarded by mu_
  HandlerThreads threads_;                                  // last: joined first
};

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_PULL_REGISTRY_H_
