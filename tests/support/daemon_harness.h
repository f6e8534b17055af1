// Test support: runs the real llmd binary on a temporary socket with a synthetic model, and
// talks to it with raw bytes. Header-only.
#ifndef LLMD_TESTS_SUPPORT_DAEMON_HARNESS_H_
#define LLMD_TESTS_SUPPORT_DAEMON_HARNESS_H_

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/frame_codec.h"
#include "proto/messages.h"
#include "tests/support/test_models.h"
#include "tests/support/wait_for.h"

namespace llmd::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private directory for sockets, readable by other users so permission tests see EACCES
// from the socket itself, not from the directory.
// A process's resident memory in KiB (VmRSS), or -1.
inline long ProcessRssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

// True when scripts/sanitize runs the suite: RSS then measures ASan's shadow memory and
// quarantine, and timings its slowdown, so bounds on those are checked by the plain run only.
inline bool UnderSanitizer() { return std::getenv("LLMD_SANITIZER") != nullptr; }

// In a forked child: die with the test. When ctest kills a timed-out test, its daemons and
// servers would otherwise live on and hold the machine.
inline void DieWithParent() { ::prctl(PR_SET_PDEATHSIG, SIGKILL); }

inline std::string MakeTempDir() {
  char tmpl[] = "/tmp/llmd_it_XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0755);
  return dir;
}

class DaemonProcess {
 public:
  // Starts llmd with `extra` arguments; waits until it logs "ready" (or exits). An empty
  // `model` leaves the model to the arguments (or a config file).
  explicit DaemonProcess(std::vector<std::string> extra = {}, std::string model = TinyModelPath()) {
    dir_ = MakeTempDir();
    socket_ = dir_ + "/llm.sock";
    log_ = dir_ + "/llmd.log";
    // kEngineThreads (test_models.h); a test that needs more says so: the last --threads wins.
    std::vector<std::string> args = {LLMD_BINARY, "--socket", socket_, "--threads", std::to_string(kEngineThreads),
                                     "--context", "1024"};
    if (!model.empty()) args.insert(args.end(), {"--model", model});
    args.insert(args.end(), extra.begin(), extra.end());
    Start(args);
  }
  ~DaemonProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::string cmd = "rm -rf " + dir_;
    (void)!::system(cmd.c_str());
  }

  void Start(const std::vector<std::string>& args) {
    pid_ = ::fork();
    if (pid_ == 0) {
      DieWithParent();
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 2);
      ::dup2(fd, 1);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ready_ = WaitForLog("llmd info ready");
  }

  // Waits until the log holds `needle`; false once `limit` passes or the daemon has exited
  // without writing it.
  bool WaitForLog(const std::string& needle, std::chrono::milliseconds limit = kLiveness) {
    WaitFor([&] { return log().find(needle) != std::string::npos || !Running(); }, limit);
    return log().find(needle) != std::string::npos;  // read again: it may have come as it exited
  }

  bool Running() {
    if (pid_ <= 0) return false;
    int status;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return true;
  }

  // Waits for the process to exit; returns its exit code, or -1 on timeout / signal. The
  // limit is a liveness bound: an exit that does not come within it is lost.
  int WaitExit(std::chrono::milliseconds limit = kLiveness) {
    if (!WaitFor([&] { return !Running(); }, limit)) return -1;
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
  }

  void Signal(int sig) { ::kill(pid_, sig); }

  int FdCount() const {
    int n = 0;
    DIR* d = ::opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
    if (d == nullptr) return -1;
    while (auto* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
    return n;
  }

  long RssKb() const { return ProcessRssKb(pid_); }

  size_t CountLog(const std::string& needle) const {
    std::string log = ReadAll(log_);
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  }

  bool ready() const { return ready_; }
  pid_t pid() const { return pid_; }
  const std::string& socket() const { return socket_; }
  const std::string& dir() const { return dir_; }
  std::string log() const { return ReadAll(log_); }

 private:
  std::string dir_, socket_, log_;
  pid_t pid_ = -1;
  int exit_status_ = 0;
  bool ready_ = false;
};

// Daemon flags for a guard cascade whose guard (the tiny model) can only give `verdict`: its
// grammar allows nothing else, whatever its random weights say.
inline std::vector<std::string> ForcedGuardArgs(const std::string& verdict) {
  return {"--models", "guard=" + TinyModelPath(), "--guard-model", "guard", "--guard-grammar",
          "root ::= \"" + verdict + "\""};
}

// A bound, listening Unix socket that nobody serves (a silent peer, or a socket handed over as
// systemd would). Returns the descriptor, or -1.
inline int ListenUnix(const std::string& path, int backlog = 8) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, backlog) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A raw connection for byte-level tests.
class RawConn {
 public:
  explicit RawConn(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConn() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool Write(std::string_view bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  bool Send(const proto::Request& r) { return Write(proto::EncodeFrame(proto::EncodeRequest(r))); }

  // The next response, or nullopt on EOF/timeout. The default timeout is the liveness bound:
  // a test that expects an answer waits for it as long as a loaded machine may need.
  std::optional<proto::Response> Receive(int timeout_ms = kLivenessMillis) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      if (!pending_.empty()) {
        auto used = decoder_.Feed(pending_);
        if (!used.has_value()) return std::nullopt;
        pending_.erase(0, *used);
      }
      if (auto f = decoder_.TakeFrame()) {
        auto r = proto::DecodeResponse(*f);
        if (!r.has_value()) return std::nullopt;
        return *r;
      }
      // Look at least once, so a zero timeout still takes what has arrived.
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      end - std::chrono::steady_clock::now()).count());
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, std::max(left, 0)) <= 0) {
        if (left <= 0) return std::nullopt;
        continue;
      }
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        return std::nullopt;
      }
      pending_.append(buf, static_cast<size_t>(n));
    }
  }
  // True when the daemon closed the connection (EOF) within `timeout_ms` (a liveness bound by
  // default); false at once when a response comes instead.
  bool ClosedByPeer(int timeout_ms = kLivenessMillis) {
    auto r = Receive(timeout_ms);
    return !r.has_value() && eof_;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  proto::FrameDecoder decoder_;
  std::string pending_;
};

inline proto::Request HealthRequest() {
  proto::Request r;
  r.type = proto::Request::Type::kHealthCheck;
  return r;
}

inline proto::Request GenerateRequest(std::string prompt, std::optional<uint32_t> max_tokens, bool stream = false) {
  proto::Request r;
  r.type = stream ? proto::Request::Type::kGenerateStream : proto::Request::Type::kGenerate;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  if (stream) r.params.temperature = 0.0f;
  return r;
}

// Runs `fn` in a child process as uid/gid 65534 (nobody); returns its exit code.
template <typename Fn>
int RunAsNobody(Fn fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
    ::_exit(fn());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_DAEMON_HARNESS_H_
