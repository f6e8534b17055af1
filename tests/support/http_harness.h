// HTTP helpers for integration tests: requests through the real curl binary (over the Unix
// socket or TCP), and a daemon started with its HTTP API on both.
#ifndef LLMD_TESTS_SUPPORT_HTTP_HARNESS_H_
#define LLMD_TESTS_SUPPORT_HTTP_HARNESS_H_

#include <atomic>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/daemon_harness.h"

namespace llmd::testing {

struct HttpReply {
  int status = 0;  // 0: curl got no response
  std::string headers;
  std::string body;
};

// Runs curl with `args` (already shell-quoted) and `body` as the request body, if any.
inline HttpReply Curl(const std::string& dir, const std::string& args, const std::string& body = "",
                      int max_seconds = 60) {
  static std::atomic<int> counter{0};  // tests call curl from several threads at once
  const std::string stem = dir + "/curl" + std::to_string(++counter);
  std::string cmd = "curl -s -i --max-time " + std::to_string(max_seconds) + " " + args;
  if (!body.empty() || args.find("-X POST") != std::string::npos) {
    std::ofstream(stem + ".in", std::ios::binary) << body;
    cmd += " -H 'Content-Type: application/json' --data-binary @" + stem + ".in";
  }
  cmd += " > " + stem + ".out 2>/dev/null";
  (void)!std::system(cmd.c_str());
  std::string raw = ReadAll(stem + ".out");
  HttpReply r;
  // Skip interim "100 Continue" heads.
  while (raw.starts_with("HTTP/1.1 ")) {
    size_t end = raw.find("\r\n\r\n");
    if (end == std::string::npos) break;
    r.status = std::stoi(raw.substr(9, 3));
    r.headers = raw.substr(0, end);
    raw.erase(0, end + 4);
    if (r.status != 100) break;
  }
  r.body = raw;
  return r;
}

// A daemon with the HTTP API on its Unix socket and on loopback TCP (API key in key_file).
class HttpDaemon {
 public:
  static constexpr const char* kApiKey = "test-key-0123456789abcdef";
  explicit HttpDaemon(std::vector<std::string> extra = {}, std::string model = TinyModelPath())
      : key_dir_(MakeTempDir()) {
    std::ofstream(key_dir_ + "/key") << kApiKey << "\n";
    ::chmod((key_dir_ + "/key").c_str(), 0600);
    extra.insert(extra.end(), {"--http-listen", "127.0.0.1:0", "--api-key-file", key_dir_ + "/key"});
    daemon_ = std::make_unique<DaemonProcess>(extra, model);
    std::smatch m;
    std::string log = daemon_->log();
    if (std::regex_search(log, m, std::regex("tcp=127\\.0\\.0\\.1:([0-9]+)"))) port_ = std::stoi(m[1]);
  }
  ~HttpDaemon() {
    daemon_.reset();
    (void)!std::system(("rm -rf " + key_dir_).c_str());
  }
  DaemonProcess& process() { return *daemon_; }
  std::string http_socket() const { return daemon_->dir() + "/http.sock"; }
  int port() const { return port_; }

  // Over the Unix socket: path like "/v1/models".
  HttpReply Unix(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& more = "") {
    return Curl(daemon_->dir(), "--unix-socket " + http_socket() + " -X " + method + " " + more + " 'http://localhost" + path + "'", body);
  }
  // Over TCP, with the API key unless `more` says otherwise.
  HttpReply Tcp(const std::string& method, const std::string& path, const std::string& body = "",
                const std::string& more = "-H 'Authorization: Bearer " + std::string(kApiKey) + "'") {
    return Curl(daemon_->dir(), "-X " + method + " " + more + " 'http://127.0.0.1:" + std::to_string(port_) + path + "'", body);
  }

 private:
  std::string key_dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  int port_ = 0;
};

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_HTTP_HARNESS_H_
