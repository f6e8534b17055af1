// DirWatcher on real directories. Each test waits for the callback that reports what it did
// (a generous liveness bound, never a sleep) and asserts what the callback saw.
#include "models/dir_watcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "models/models_test_util.h"
#include "tests/support/wait_for.h"

namespace llmd::models {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

constexpr auto kLiveness = std::chrono::seconds(30);

// Collects every callback; tests wait on it for the one they expect.
class Recorder {
 public:
  DirWatcher::Callback callback() {
    return [this](const DirChanges& changes) {
      std::unique_lock<std::mutex> lock(mu_);
      calls_.push_back(changes);
      ++entered_;
      cv_.notify_all();
      cv_.wait(lock, [this] { return !held_; });
    };
  }

  // Waits until a call numbered `from` or later reported `path`; returns its index, or -1 at
  // the liveness bound.
  int WaitForPath(const std::string& path, size_t from = 0) {
    return WaitForCall(
        [&](const DirChanges& c) {
          return std::find(c.paths.begin(), c.paths.end(), path) != c.paths.end();
        },
        from);
  }
  int WaitForRescanAll(size_t from = 0) {
    return WaitForCall([](const DirChanges& c) { return c.rescan_all; }, from);
  }
  template <typename Pred>
  int WaitForCall(Pred pred, size_t from) {
    std::unique_lock<std::mutex> lock(mu_);
    int found = -1;
    cv_.wait_for(lock, kLiveness, [&] {
      for (size_t i = from; i < calls_.size() && found < 0; ++i) {
        if (pred(calls_[i])) found = static_cast<int>(i);
      }
      return found >= 0;
    });
    return found;
  }
  // Waits until the callback has been entered `n` times.
  bool WaitForEntered(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kLiveness, [&] { return entered_ >= n; });
  }

  // While held, a callback does not return (events pile up in the kernel's queue meanwhile).
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    cv_.notify_all();
  }

  std::vector<DirChanges> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<DirChanges> calls_;
  size_t entered_ = 0;
  bool held_ = false;
};

DirWatcherOptions Fast() {
  DirWatcherOptions options;
  options.quiet = std::chrono::milliseconds(20);
  options.max_delay = std::chrono::milliseconds(500);
  return options;
}

std::unique_ptr<DirWatcher> Watch(std::vector<std::string> dirs, Recorder* recorder,
                                  DirWatcherOptions options = Fast()) {
  auto watcher = DirWatcher::Start(std::move(dirs), recorder->callback(), options);
  EXPECT_TRUE(watcher.has_value()) << watcher.error().ToString();
  return watcher.has_value() ? std::move(*watcher) : nullptr;
}

TEST(DirWatcher, NoticesAFileAdded) {
  TempDir dir;
  Recorder recorder;
  auto watcher = Watch({dir.path().string()}, &recorder);
  ASSERT_NE(watcher, nullptr);
  WriteFile(dir / "m.gguf", "bytes");
  ASSERT_GE(recorder.WaitForPath(dir / "m.gguf"), 0);
  for (const DirChanges& call : recorder.calls()) {
    EXPECT_TRUE(std::is_sorted(call.paths.begin(), call.paths.end()));
    EXPECT_EQ(std::adjacent_find(call.paths.begin(), call.paths.end()), call.paths.end());
  }
}

TEST(DirWatcher, NoticesAFileRemoved) {
  TempDir dir;
  WriteFile(dir / "m.gguf", "bytes");
  Recorder recorder;
  auto watcher = Watch({dir.path().string()}, &recorder);
  ASSERT_NE(watcher, nullptr);
  fs::remove(dir / "m.gguf");
  ASSERT_GE(recorder.WaitForPath(dir / "m.gguf"), 0);
}

TEST(DirWatcher, NoticesRenamesIntoPlaceButNotTheTemporaryName) {
  TempDir dir;
  TempDir staging;
  Recorder recorder;
  auto watcher = Watch({dir.path().string()}, &recorder);
  ASSERT_NE(watcher, nullptr);
  // Written under a '.' name, renamed into place: the way to publish a whole file.
  WriteFile(dir / ".m.gguf.tmp", "bytes");
  fs::rename(dir / ".m.gguf.tmp", dir / "m.gguf");
  ASSERT_GE(recorder.WaitForPath(dir / "m.gguf"), 0);
  // Moved in from another directory, and out again.
  WriteFile(staging / "n.modelfile", "FROM m.gguf\n");
  fs::rename(staging / "n.modelfile", dir / "n.modelfile");
  ASSERT_GE(recorder.WaitForPath(dir / "n.modelfile"), 0);
  const size_t before_out = recorder.calls().size();
  fs::rename(dir / "m.gguf", staging / "m.gguf");
  ASSERT_GE(recorder.WaitForPath(dir / "m.gguf", before_out), 0);
  for (const DirChanges& call : recorder.calls()) {
    for (const std::string& path : call.paths) {
      EXPECT_EQ(path.find("/."), std::string::npos) << path;  // no hidden names reported
    }
  }
}

TEST(DirWatcher, NamespaceFoldersAreWatched) {
  TempDir dir;
  Recorder recorder;
  auto watcher = Watch({dir.path().string()}, &recorder);
  ASSERT_NE(watcher, nullptr);
  fs::create_directory(dir / "library");
  ASSERT_GE(recorder.WaitForPath(dir / "library"), 0);
  // The callback came after the watcher moved onto the new folder: a file in it is seen.
  WriteFile(dir / "library/q.gguf", "bytes");
  ASSERT_GE(recorder.WaitForPath(dir / "library/q.gguf"), 0);
}

TEST(DirWatcher, WaitsForADirectoryThatDoesNotExistYet) {
  TempDir parent;
  const std::string models = parent / "state/llmd/models";
  Recorder recorder;
  auto watcher = Watch({models}, &recorder);
  ASSERT_NE(watcher, nullptr);
  fs::create_directories(models);  // three levels: the watch climbs down as they appear
  ASSERT_GE(recorder.WaitForRescanAll(), 0);
  // The callback came after the watcher moved onto the directory: a file in it is seen.
  WriteFile(models + "/m.gguf", "bytes");
  ASSERT_GE(recorder.WaitForPath(models + "/m.gguf"), 0);

  // Deleted: reported, and waited for again.
  size_t from = recorder.calls().size();
  fs::remove_all(parent / "state");
  ASSERT_GE(recorder.WaitForRescanAll(from), 0);
  from = recorder.calls().size();
  fs::create_directories(models);
  ASSERT_GE(recorder.WaitForRescanAll(from), 0);
  from = recorder.calls().size();
  WriteFile(models + "/again.gguf", "bytes");
  ASSERT_GE(recorder.WaitForPath(models + "/again.gguf", from), 0);
}

TEST(DirWatcher, OneCallPerBurst) {
  TempDir dir;
  Recorder recorder;
  auto watcher = Watch({dir.path().string()}, &recorder);
  ASSERT_NE(watcher, nullptr);
  recorder.Hold();
  WriteFile(dir / "first.gguf", "bytes");
  ASSERT_TRUE(recorder.WaitForEntered(1));
  // While the first callback runs, a burst of ten files lands in the kernel's queue; the
  // watcher reads it whole and reports it in one call.
  std::vector<std::string> burst;
  for (int i = 0; i < 10; ++i) {
    burst.push_back(dir / std::string("m").append(std::to_string(i)).append(".gguf"));
    WriteFile(burst.back(), "bytes");
  }
  recorder.Release();
  ASSERT_TRUE(recorder.WaitForEntered(2));
  std::vector<DirChanges> calls = recorder.calls();
  ASSERT_GE(calls.size(), 2u);
  for (const std::string& path : burst) {
    EXPECT_NE(std::find(calls[1].paths.begin(), calls[1].paths.end(), path), calls[1].paths.end())
        << path;
  }
}

TEST(DirWatcher, StopIsPromptEvenMidBurst) {
  TempDir dir;
  Recorder recorder;
  DirWatcherOptions slow;
  slow.quiet = std::chrono::hours(1);  // a burst that would end only in an hour
  slow.max_delay = std::chrono::hours(1);
  auto watcher = Watch({dir.path().string()}, &recorder, slow);
  ASSERT_NE(watcher, nullptr);
  WriteFile(dir / "m.gguf", "bytes");
  ASSERT_TRUE(llmd::testing::WaitFor([&] { return watcher->events_seen() > 0; }));
  auto stopped = std::async(std::launch::async, [&] { watcher->Stop(); });
  ASSERT_EQ(stopped.wait_for(kLiveness), std::future_status::ready);
  EXPECT_TRUE(recorder.calls().empty());  // the pending burst was dropped, not waited for
  watcher->Stop();                        // idempotent
  watcher.reset();
}

TEST(DirWatcher, StopWhenIdleAndDestroyWithoutStop) {
  TempDir dir;
  Recorder recorder;
  auto watcher = Watch({dir.path().string(), dir / "missing"}, &recorder);
  ASSERT_NE(watcher, nullptr);
  auto stopped = std::async(std::launch::async, [&] { watcher.reset(); });
  ASSERT_EQ(stopped.wait_for(kLiveness), std::future_status::ready);
  EXPECT_TRUE(recorder.calls().empty());
}

}  // namespace
}  // namespace llmd::models
