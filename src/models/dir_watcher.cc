#include "models/dir_watcher.h"

#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "models/model_name.h"

namespace llmd::models {
namespace {

// What changes a models directory's listing (and, through a file's stamp, the cache).
constexpr uint32_t kContentMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                  IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF |
                                  IN_ONLYDIR;
// What can make a missing directory appear below an ancestor.
constexpr uint32_t kAncestorMask =
    IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Parent(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The closest directory above `path` that exists ("/" and "." always do).
std::string NearestAncestor(const std::string& path) {
  std::string p = Parent(path);
  while (p != "/" && p != "." && !IsDirectory(p)) p = Parent(p);
  return p;
}

// The namespace folders of a models directory, as the catalog lists them (model_dir.h).
std::vector<std::string> NamespaceFolders(const std::string& root) {
  std::vector<std::string> out;
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return out;
  while (const dirent* ent = ::readdir(dir)) {
    const std::string name = ent->d_name;
    if (name.empty() || name.front() == '.' || !IsValidNamespace(name)) continue;
    struct stat lst {};
    const std::string path = root + "/" + name;
    if (::lstat(path.c_str(), &lst) == 0 && S_ISDIR(lst.st_mode)) out.push_back(path);
  }
  ::closedir(dir);
  return out;
}

}  // namespace

Result<std::unique_ptr<DirWatcher>> DirWatcher::Start(std::vector<std::string> dirs,
                                                      Callback on_change,
                                                      DirWatcherOptions options) {
  const int inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd < 0) {
    return UnavailableError(std::string("inotify_init1: ") + std::strerror(errno));
  }
  const int stop_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd < 0) {
    const int err = errno;
    ::close(inotify_fd);
    return UnavailableError(std::string("eventfd: ") + std::strerror(err));
  }
  std::unique_ptr<DirWatcher> watcher(
      new DirWatcher(std::move(dirs), std::move(on_change), options, inotify_fd, stop_fd));
  DirChanges initial;  // what exists now is the owner's first scan, not a change
  watcher->Rearm(&initial);
  watcher->thread_ = std::thread(&DirWatcher::Run, watcher.get());
  return watcher;
}

DirWatcher::DirWatcher(std::vector<std::string> dirs, Callback on_change, DirWatcherOptions options,
                       int inotify_fd, int stop_fd)
    : roots_(std::move(dirs)),
      on_change_(std::move(on_change)),
      options_(options),
      inotify_fd_(inotify_fd),
      stop_fd_(stop_fd),
      present_(roots_.size(), false) {}

DirWatcher::~DirWatcher() {
  Stop();
  ::close(inotify_fd_);
  ::close(stop_fd_);
}

void DirWatcher::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  thread_.join();
}

// Where each root's watch belongs now: the root itself, or "?" and its nearest ancestor.
std::vector<std::string> DirWatcher::Targets() const {
  std::vector<std::string> targets;
  for (const std::string& root : roots_) {
    targets.push_back(IsDirectory(root) ? root : std::string("?").append(NearestAncestor(root)));
  }
  return targets;
}

void DirWatcher::Rearm(DirChanges* changes) {
  // A directory made between a look and the watch that follows it makes no event, so look
  // again after arming, and arm again until the two agree (each round is one level of a
  // `mkdir -p` that raced us).
  std::vector<std::string> targets = Targets();
  for (int round = 0; round < 64; ++round) {
    Arm(targets, changes);
    std::vector<std::string> now = Targets();
    if (now == targets) break;
    targets = std::move(now);
  }
}

void DirWatcher::Arm(const std::vector<std::string>& targets, DirChanges* changes) {
  std::map<std::string, Watch> wanted;  // by path
  for (size_t i = 0; i < roots_.size(); ++i) {
    const bool present = targets[i].front() != '?';
    if (present != present_[i]) changes->rescan_all = true;
    present_[i] = present;
    if (!present) {
      const std::string ancestor = targets[i].substr(1);
      wanted.try_emplace(ancestor, Watch{ancestor, false});
      continue;
    }
    wanted.insert_or_assign(roots_[i], Watch{roots_[i], true});
    for (const std::string& folder : NamespaceFolders(roots_[i])) {
      wanted.insert_or_assign(folder, Watch{folder, true});
    }
  }
  std::map<int, Watch> armed;
  for (const auto& [path, watch] : wanted) {
    // IN_MASK_ADD: a directory that is both an ancestor and a models directory keeps both
    // masks; a mask only ever grows, which costs a spurious Rearm at worst.
    const uint32_t mask = (watch.content ? kContentMask : kAncestorMask) | IN_MASK_ADD;
    const int wd = ::inotify_add_watch(inotify_fd_, path.c_str(), mask);
    if (wd < 0) continue;  // gone since the look: the next round or event rearms
    auto [it, inserted] = armed.try_emplace(wd, watch);
    if (!inserted) it->second.content = it->second.content || watch.content;
  }
  for (const auto& [wd, watch] : watches_) {
    if (armed.count(wd) == 0) ::inotify_rm_watch(inotify_fd_, wd);
  }
  watches_ = std::move(armed);
}

bool DirWatcher::ReadEvents(DirChanges* changes) {
  alignas(inotify_event) char buf[16 * 1024];
  bool report = false;
  bool rearm = false;
  while (true) {
    const ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      events_seen_.fetch_add(1);
      if (ev->mask & IN_Q_OVERFLOW) {
        changes->rescan_all = report = rearm = true;
        continue;
      }
      auto it = watches_.find(ev->wd);
      if (it == watches_.end()) continue;
      if (ev->mask & IN_IGNORED) {  // the kernel dropped the watch: its directory went
        watches_.erase(it);
        rearm = true;
        continue;
      }
      const Watch& watch = it->second;
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        rearm = true;
        if (watch.content) changes->rescan_all = report = true;
        continue;
      }
      if (!watch.content) {  // an ancestor: the missing directory may be there now
        rearm = true;
        continue;
      }
      const std::string name = ev->len > 0 ? std::string(ev->name) : std::string();
      if (name.empty() || name.front() == '.') continue;
      if (ev->mask & IN_ISDIR) rearm = true;  // a namespace folder came or went
      changes->paths.push_back(watch.path + "/" + name);
      report = true;
    }
  }
  if (rearm) Rearm(changes);
  return report || changes->rescan_all;
}

void DirWatcher::Run() {
  using Clock = std::chrono::steady_clock;
  DirChanges pending;
  bool have = false;
  Clock::time_point first{};
  while (true) {
    int timeout_ms = -1;
    if (have) {
      const auto left = options_.max_delay - (Clock::now() - first);
      const auto wait = std::min<Clock::duration>(options_.quiet, left);
      const int64_t ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, std::numeric_limits<int>::max()));
    }
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, 2, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (fds[0].revents & POLLIN)) return;
    bool fire = ready == 0 && have;  // quiet for `quiet`: the burst is over
    if (fds[1].revents & POLLIN) {
      if (ReadEvents(&pending) && !have) {
        have = true;
        first = Clock::now();
      }
    }
    if (have && Clock::now() - first >= options_.max_delay) fire = true;
    if (!fire) continue;
    std::sort(pending.paths.begin(), pending.paths.end());
    pending.paths.erase(std::unique(pending.paths.begin(), pending.paths.end()),
                        pending.paths.end());
    on_change_(pending);
    pending = DirChanges{};
    have = false;
  }
}

}  // namespace llmd::models
