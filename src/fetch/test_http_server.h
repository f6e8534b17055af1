// TestHttpServer (tests only, in fetch_test): a small HTTP/1.1 server on 127.0.0.1 (port 0)
// over plain sockets, serving byte payloads with Range support and with the misbehaviours a
// download must survive: a connection dropped mid-body, wrong bytes, a Content-Length that
// lies either way, a Range ignored or answered from the wrong offset, a body held at a gate
// until the test opens it, a redirect, an error status. It logs every request (method, path,
// Range header), so tests assert what the client asked for instead of timing anything.
//
// One thread per connection, one request per connection ("Connection: close").
// Thread-safety: every method is thread-safe. The destructor opens the gate, stops accepting
// and joins every thread.
#ifndef LLMD_FETCH_TEST_HTTP_SERVER_H_
#define LLMD_FETCH_TEST_HTTP_SERVER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace llmd::fetch::testing {

enum class Mode {
  kNormal,           // 200, or 206/416 for "Range: bytes=N-"
  kDropAfter,        // the first reply closes after body byte `param` (absolute offset); later ones
                     // normal
  kCorruptByte,      // the byte at offset `param` is flipped
  kLieShort,         // announces `param` more bytes than it sends, then closes
  kLieLong,          // announces `param` fewer bytes than it sends
  kIgnoreRange,      // always 200 with the whole body
  kBadContentRange,  // a Range request gets 206 "bytes 0-.../size" with the whole body
  kGate,             // sends `param` body bytes, then waits for OpenGate()
  kRedirect,         // 302 to `location`
  kStatus,           // status `param`, a short text body
  kNoLength,         // 200 without Content-Length: the body ends when the connection closes
};

struct Resource {
  std::string body;
  Mode mode = Mode::kNormal;
  size_t param = 0;
  std::string location;
};

struct LoggedRequest {
  std::string method;
  std::string path;   // without the query
  std::string range;  // the Range header's value; "" when absent
};

class TestHttpServer {
 public:
  TestHttpServer();
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  // "http://127.0.0.1:<port>" + path.
  std::string Url(std::string_view path) const;
  std::string base_url() const { return Url(""); }
  // Serves `r` at `path` (replacing what was there).
  void Serve(const std::string& path, Resource r);

  std::vector<LoggedRequest> Requests() const;
  std::vector<LoggedRequest> RequestsFor(std::string_view path) const;
  // True once `n` requests for `path` have come (false after the liveness bound).
  bool WaitForRequests(std::string_view path, size_t n) const;
  // True once a gated reply has sent its first part (false after the liveness bound).
  bool WaitForGate() const;
  void OpenGate();

 private:
  void AcceptLoop();
  void Handle(int fd);
  void Respond(int fd, const std::string& path, const std::string& range);
  bool WaitAtGate();

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Resource> resources_;  // guarded by mu_
  std::map<std::string, int> served_;          // replies begun, by path; guarded by mu_
  std::vector<LoggedRequest> log_;             // guarded by mu_
  bool gate_reached_ = false;                  // guarded by mu_
  bool gate_open_ = false;                     // guarded by mu_
  bool stopping_ = false;                      // guarded by mu_
  std::vector<std::thread> connections_;       // guarded by mu_
  std::thread acceptor_;
};

}  // namespace llmd::fetch::testing

#endif  // LLMD_FETCH_TEST_HTTP_SERVER_H_
