// HttpServer: HTTP/1.1 on already-listening sockets (the daemon's Unix socket and, when
// configured, a loopback TCP socket), one thread per connection, bounded. Boost.Beast parses
// and is hidden in http_server.cc; our own code does the socket I/O so every read and write
// has a deadline (slow or silent peers are dropped, never waited on forever).
//
// Limits: the header, the body and the number of connections are bounded; over the limit a
// peer gets 431, 413 or 503 and the connection closes. A malformed request gets 400; so does a
// malformed query string (query_string.h), naming the fault, and the connection stays open.
// Connections are shared by a ConnectionBudget (connection_budget.h): a TCP connection holds a
// slot of the small unidentified pool until its headers are in (within header_timeout_ms of
// accept), then its UID's fair share of the rest; so a slow-header flood cannot take the
// connections of the Unix socket's peers or of other UIDs. A TCP request refused 401 or 403
// closes its connection: it never holds a slot it has not earned.
//
// Thread-safety: Start and Stop on one thread; the handler runs on connection threads, one
// request at a time per connection. Lifetime: the handler and `admit` must outlive Stop().
#ifndef LLMD_HTTP_HTTP_SERVER_H_
#define LLMD_HTTP_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/api_error.h"
#include "http/query_string.h"
#include "llmd/result.h"

namespace llmd::http {

// No group is known for the peer (a TCP peer whose UID has no user entry); matches no allowlist.
inline constexpr uint32_t kNoGid = 0xFFFFFFFFu;

// Who sent a request. Unix socket peers carry their credentials (SO_PEERCRED). A TCP peer on
// loopback is identified by the kernel's socket table when it can be: its UID, that UID's
// primary group (or kNoGid), no pid.
struct Peer {
  bool tcp = false;
  uint32_t uid = 0, gid = 0;
  int32_t pid = 0;
  bool identified = false;  // uid and gid are the peer's (always, on the Unix socket)
  bool allowed = false;     // the UID/GID allowlist allows it (always, on the Unix socket)
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query string
  // The target's query string, parsed and decoded (query_string.h); a malformed one is
  // answered 400 by the server and never reaches the handler.
  QueryParams query;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  Peer peer;

  // A header's value, or "" when absent. `name` in lower case.
  std::string header(const std::string& name) const;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// Writes one response: either Send, or BeginStream, then WriteChunk calls, then EndStream.
// Every call returns false once the peer is gone or stopped reading (the write deadline
// passed); the connection then closes.
class Responder {
 public:
  virtual ~Responder() = default;
  virtual bool Send(int status, std::string_view content_type, std::string_view body,
                    const Headers& extra = {}) = 0;
  virtual bool BeginStream(int status, std::string_view content_type, const Headers& extra = {}) = 0;
  virtual bool WriteChunk(std::string_view data) = 0;
  virtual bool EndStream() = 0;
  // The connection's socket, to poll for the peer hanging up while a response is prepared.
  virtual int fd() const = 0;
  // Starts `task` on a thread of the server's, counted against its connection limit and
  // joined at Stop (a request's `n` choices run on them); false, and nothing runs, when the
  // limit is reached. The task must not outlive what it uses: its caller waits for it.
  virtual bool StartThread(const std::function<void()>& /*task*/) { return false; }
};

using Handler = std::function<void(const Request&, Responder&)>;

struct ServerOptions {
  int unix_fd = -1;  // a listening Unix socket (owned by the caller), or -1
  int tcp_fd = -1;   // a listening TCP socket (owned by the caller), or -1
  int second_tcp_fd = -1;  // another one served the same way (ollama_listen), or -1
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 1024 * 1024;
  size_t max_connections = 64;  // connections and a request's extra threads, all together
  // Of max_connections, the unidentified pool: TCP connections whose first request's headers
  // are not in yet, and TCP peers with no known UID. Must be less than max_connections when a
  // TCP socket is served.
  size_t max_unidentified_connections = 8;
  int idle_timeout_ms = 30000;     // waiting for a request to start
  int header_timeout_ms = 2000;    // a request's headers, from its first byte (a new TCP connection's: from accept)
  int request_timeout_ms = 10000;  // a started request must arrive whole within this
  int write_timeout_ms = 10000;    // a peer that reads nothing for this long is dropped
  // Unix socket peers: the credentials of an allowed peer, nullopt to close at once.
  std::function<std::optional<Peer>(int fd)> admit;
  // TCP peers: who the peer is (identified, uid, gid, allowed); null: every TCP peer is
  // unidentified. Runs on the accept thread.
  std::function<Peer(int fd)> identify_tcp;
  Handler handler;
  // The body of an error the server sends itself (over the connection limit, too large,
  // malformed, too slow), in the shape of the API `path` (maybe "") belongs to; null: OpenAI's.
  std::function<std::string(std::string_view path, const ApiError& error)> error_body;
};

class HttpServer {
 public:
  // Starts the accept thread.
  static Result<std::unique_ptr<HttpServer>> Start(ServerOptions options);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Stops accepting, asks every connection to finish, and waits for them.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Opens a listening TCP socket on a loopback address "HOST:PORT" (127.0.0.0/8, [::1] or
// localhost; PORT 0 picks a free one). Other addresses are refused: the API is local only.
Result<int> ListenLoopbackTcp(const std::string& host_port, int* bound_port);

}  // namespace llmd::http

#endif  // LLMD_HTTP_HTTP_SERVER_H_
