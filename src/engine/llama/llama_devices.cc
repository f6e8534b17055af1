#include "engine/llama/llama_devices.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#include "llama.h"

namespace llmd::engine {
namespace {

bool g_verbose = false;
thread_local std::vector<std::string>* t_held = nullptr;  // HeldLlamaLogs's, on its thread

void LogToStderr(ggml_log_level level, const char* text, void*) {
  if (g_verbose || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) {
    if (t_held != nullptr) {
      t_held->emplace_back(text);
    } else {
      std::fputs(text, stderr);
    }
  }
}

}  // namespace

HeldLlamaLogs::HeldLlamaLogs() { t_held = &lines_; }

HeldLlamaLogs::~HeldLlamaLogs() {
  t_held = nullptr;
  for (const std::string& line : lines_) std::fputs(line.c_str(), stderr);
}

void HeldLlamaLogs::Drop() { lines_.clear(); }

void InitLlamaBackend(bool verbose) {
  static std::once_flag once;
  if (verbose) g_verbose = true;
  std::call_once(once, [] {
    llama_log_set(LogToStderr, nullptr);
    llama_backend_init();
  });
}

std::vector<std::string> ListLlamaDevices() {
  InitLlamaBackend(false);
  std::vector<std::string> names;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    names.emplace_back(ggml_backend_dev_name(ggml_backend_dev_get(i)));
  }
  return names;
}

namespace {
// ggml aborts the process when an RPC server cannot be reached, so try a connection first.
bool RpcServerAnswers(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return false;
  bool ok = false;
  for (addrinfo* a = res; a != nullptr && !ok; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, 2000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return ok;
}
}  // namespace

Status AddRpcServers(const std::vector<std::string>& endpoints) {
  InitLlamaBackend(false);
  static std::mutex mu;
  static std::set<std::string> added;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& endpoint : endpoints) {
    if (added.count(endpoint)) continue;
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size()) {
      return InvalidArgumentError("RPC server '" + endpoint + "' is not host:port");
    }
    std::string host = endpoint.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (!RpcServerAnswers(host, endpoint.substr(colon + 1))) {
      return UnavailableError("RPC server " + endpoint + " cannot be reached (is ggml-rpc-server running there?)");
    }
    ggml_backend_reg_t reg = ggml_backend_rpc_add_server(endpoint.c_str());
    if (reg == nullptr) {
      return UnavailableError("RPC server " + endpoint + " did not answer (is ggml-rpc-server running there?)");
    }
    ggml_backend_register(reg);
    added.insert(endpoint);
  }
  return Status::Ok();
}

std::vector<DeviceReport> DescribeLlamaDevices() {
  InitLlamaBackend(false);
  std::vector<DeviceReport> out;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    DeviceReport r;
    r.name = ggml_backend_dev_name(dev);
    r.description = ggml_backend_dev_description(dev);
    switch (ggml_backend_dev_type(dev)) {
      case GGML_BACKEND_DEVICE_TYPE_CPU: r.type = "cpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_GPU: r.type = "gpu"; break;
      case GGML_BACKEND_DEVICE_TYPE_IGPU: r.type = "igpu"; break;
      default: r.type = "accel"; break;
    }
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    r.free_bytes = free;
    r.total_bytes = total;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace llmd::engine
