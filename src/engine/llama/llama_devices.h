// The ggml backends llmd's llama.cpp engine runs on: the one-time initialization (and where
// llama.cpp's log lines go), and the devices (ListLlamaDevices, DescribeLlamaDevices and
// AddRpcServers, declared in llama_engine.h) that placement and --list-devices see.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_
#define LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_

#include <string>
#include <vector>

namespace llmd::engine {

// Initializes llama.cpp's backends once per process. Its log lines go to stderr at warning
// level and above, all of them once any caller asked for `verbose`. Thread-safe.
void InitLlamaBackend(bool verbose);

// Holds llama.cpp's log lines of the calling thread instead of printing them, for one decode
// call that may be stopped: a stopped call logs four warnings and errors (the graph aborted,
// its cells removed, the decode failed) that report nothing wrong, and Drop forgets them. The
// lines still held when it ends are printed then, as they came.
class HeldLlamaLogs {
 public:
  HeldLlamaLogs();
  ~HeldLlamaLogs();
  HeldLlamaLogs(const HeldLlamaLogs&) = delete;
  HeldLlamaLogs& operator=(const HeldLlamaLogs&) = delete;
  void Drop();

 private:
  std::vector<std::string> lines_;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_
