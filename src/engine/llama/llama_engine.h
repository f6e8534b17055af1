// LlamaEngine: the Engine over llama.cpp, for GGUF models, dense (Qwen3) and hybrid (Qwen3.5:
// Gated DeltaNet + attention). The only engine that touches llama.cpp; everything it exposes
// is in our own types. Its memory capabilities come from llama_model_is_recurrent/_hybrid: a
// recurrent state cannot be cut inside a sequence, so it offers state checkpoints instead.
// Thread-safety: as Engine (one thread at a time).
#ifndef LLMD_ENGINE_LLAMA_LLAMA_ENGINE_H_
#define LLMD_ENGINE_LLAMA_LLAMA_ENGINE_H_

#include <memory>

#include "engine/engine.h"

namespace llmd::engine {

// A new, unloaded engine. llama.cpp's own log lines go to stderr at warning level and above
// (all of them when `verbose`).
std::unique_ptr<Engine> NewLlamaEngine(bool verbose = false);

// Names of the ggml devices this build can use ("CPU", "CUDA0", ...), for messages and
// --list-devices.
std::vector<std::string> ListLlamaDevices();

// One ggml device as --list-devices shows it.
struct DeviceReport {
  std::string name;         // "CPU", "CUDA0", "HTP0", "RPC[127.0.0.1:50052]"
  std::string description;  // the backend's own words (the CPU model, the GPU name, ...)
  std::string type;         // "cpu", "gpu", "igpu", "accel"
  uint64_t free_bytes = 0, total_bytes = 0;
};
std::vector<DeviceReport> DescribeLlamaDevices();

// Makes the devices of ggml RPC servers ("host:port", each a running ggml-rpc-server) usable
// as RPC0, RPC1, ... in the order first added. Each endpoint is added once per process.
// Unavailable when a server does not answer. RPC is unauthenticated and unencrypted: only for
// servers on a trusted network (docs/devices.md).
Status AddRpcServers(const std::vector<std::string>& endpoints);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_ENGINE_H_
