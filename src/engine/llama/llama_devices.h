// The ggml backends llmd's llama.cpp engine runs on: the one-time initialization (and where
// llama.cpp's log lines go), and the devices (ListLlamaDevices, DescribeLlamaDevices and
// AddRpcServers, declared in llama_engine.h) that placement and --list-devices see.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_
#define LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_

namespace llmd::engine {

// Initializes llama.cpp's backends once per process. Its log lines go to stderr at warning
// level and above, all of them once any caller asked for `verbose`. Thread-safe.
void InitLlamaBackend(bool verbose);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_DEVICES_H_
