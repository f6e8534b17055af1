// DirWatcher: tells its owner when the models directories change, so that it rescans the
// catalog (catalog.h) instead of polling. inotify watches each directory and its namespace
// folders for entries created, deleted, moved in or out, written and closed, or changed in
// their attributes (a `touch`, a `chmod`); the callback runs once a burst of such events is
// over (quiet for `quiet`, or `max_delay` after its first event, whichever is first), so
// copying a model and its manifest is one rescan, not one per event.
//
// A directory that does not exist yet is waited for by watching its nearest existing
// ancestor (the parent, or further up): when it appears, the watcher moves onto it and calls
// back with `rescan_all`. A watched directory that is deleted or moved away goes back to
// that state the same way. Entries whose names start with '.' are not reported (temporary
// files, renamed into place when whole; the rename is reported).
//
// A file being written is reported when it is created and when it is closed; an owner that
// rescans in between sees a truncated GGUF, which the catalog lists as unusable until the
// next rescan. Writers should write to a '.'-name and rename into place.
//
// Thread-safety: Start and Stop from the owner's thread. The callback runs on the watcher's
// own thread, one call at a time; it must not call Stop (Stop joins that thread).
#ifndef LLMD_MODELS_DIR_WATCHER_H_
#define LLMD_MODELS_DIR_WATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llmd/result.h"

namespace llmd::models {

struct DirChanges {
  // The entries that changed (directory + "/" + name), sorted, each once.
  std::vector<std::string> paths;
  // Rescan everything: a directory appeared or went, or the kernel dropped events (its queue
  // overflowed), so `paths` is not the whole story.
  bool rescan_all = false;
};

struct DirWatcherOptions {
  std::chrono::milliseconds quiet{250};
  std::chrono::milliseconds max_delay{5000};
};

class DirWatcher {
 public:
  using Callback = std::function<void(const DirChanges&)>;

  // Watches `dirs` and calls `on_change` after each burst. When this returns, the watches
  // are in place: a change made after it is reported. Errors: inotify or eventfd could not
  // be made (the process's inotify limits).
  static Result<std::unique_ptr<DirWatcher>> Start(std::vector<std::string> dirs,
                                                   Callback on_change,
                                                   DirWatcherOptions options = {});
  ~DirWatcher();  // Stop()
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  // Ends the thread and returns when it has: at once, not after a pending burst's delay (a
  // burst not yet reported is dropped; the owner is stopping). Idempotent.
  void Stop();

  // inotify events read so far (tests wait on it before they stop a watcher mid-burst).
  uint64_t events_seen() const { return events_seen_.load(); }

 private:
  struct Watch {
    std::string path;
    bool content = false;  // a models directory or namespace folder; else an ancestor
  };

  DirWatcher(std::vector<std::string> dirs, Callback on_change, DirWatcherOptions options,
             int inotify_fd, int stop_fd);
  void Run();
  // Drains the inotify queue into `changes`; true when something worth a callback happened.
  bool ReadEvents(DirChanges* changes);
  // Sets the watches to what the directories need now (after a directory appeared, went, or
  // got a namespace folder); marks `rescan_all` when a directory appeared or went.
  void Rearm(DirChanges* changes);
  std::vector<std::string> Targets() const;
  void Arm(const std::vector<std::string>& targets, DirChanges* changes);

  const std::vector<std::string> roots_;
  const Callback on_change_;
  const DirWatcherOptions options_;
  const int inotify_fd_;
  const int stop_fd_;
  // Touched by Start before the thread runs, then only by the thread.
  std::map<int, Watch> watches_;  // by watch descriptor
  std::vector<bool> present_;     // per root: it existed at the last Rearm
  std::atomic<uint64_t> events_seen_{0};
  std::mutex stop_mu_;
  std::thread thread_;  // joined by Stop (under stop_mu_)
};

}  // namespace llmd::models

#endif  // LLMD_MODELS_DIR_WATCHER_H_
