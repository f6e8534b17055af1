// Placement planner: which device holds which of a model's layers.
//
// From the tensor sizes in the GGUF file, the KV cache the configured context and slots need,
// and each device's free memory (or a per-device cap, such as the ~3.5 GB one Hexagon session
// can map), it chooses the layer split and how many layers to offload. It runs before
// llama.cpp loads anything, so a model that cannot fit is refused with the numbers instead of
// failing deep inside a backend, and the plan it returns is exactly what llama.cpp then does
// (its n_gpu_layers and tensor_split reproduce the plan layer for layer).
//
// llama.cpp's model of placement, which the plan follows: the token embeddings stay on the
// CPU; the repeating layers 0..n-1 and then the output head form n+1 "units"; offloading k
// units moves the last k of them to the devices, in device order, each device taking a
// contiguous run; a layer's KV cache lives with the layer.
//
// Thread-safety: pure functions of their arguments.
#ifndef LLMD_ENGINE_PLACEMENT_PLAN_H_
#define LLMD_ENGINE_PLACEMENT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/types.h"
#include "format/gguf_precheck.h"
#include "llmd/result.h"

namespace llmd::engine {

// What speculative decoding adds to a model's own memory.
struct SpeculationFootprint {
  uint32_t state_snapshots = 0;  // recurrent states kept per sequence for rollback (n_rs_seq)
  bool mtp = false;              // the MTP blocks are loaded (with their KV cache); else skipped
};

// What a model needs in memory, by where llama.cpp can put it.
struct ModelFootprint {
  std::vector<uint64_t> layer_bytes;  // weights of each repeating layer
  uint64_t output_bytes = 0;          // output norm and head
  uint64_t input_bytes = 0;           // token embeddings: always on the CPU
  uint64_t tied_output_bytes = 0;     // a second copy of the embeddings as the head, off the CPU
  // Each repeating layer's sequence memory, for every slot: the KV cache of an attention
  // layer, the recurrent state of a Gated DeltaNet layer (hybrid models).
  std::vector<uint64_t> layer_memory_bytes;
  uint64_t compute_bytes = 0;         // scratch for one micro-batch on a device holding layers
  uint64_t logits_bytes = 0;          // extra scratch on the device holding the output head

  // From the pre-check's summary, for `sequences` slots of `context_tokens` each;
  // `kv_bytes_per_value` is the cache type's size (2 for f16, 34/32 for q8_0, ...), `ubatch`
  // the prompt micro-batch, `outputs` the logits a step may ask for (one per sequence when
  // generating). Without flash attention the attention scores need room too. The file's MTP
  // blocks (nextn_layers, after the trunk) count only when `speculation.mtp`. With
  // `pool_tokens` the sequences share one KV pool of that many cells instead.
  static ModelFootprint FromGguf(const format::GgufSummary& gguf, uint32_t context_tokens, uint32_t sequences,
                                 double kv_bytes_per_value, uint32_t ubatch, uint32_t outputs, bool flash_attention,
                                 SpeculationFootprint speculation = {}, uint32_t pool_tokens = 0);
};

// One device the model may use, with what it can hold.
struct DeviceMemory {
  std::string name;         // ggml's name: "CUDA0", "HTP0", "RPC0"
  uint64_t free_bytes = 0;  // what the device reports free now
  uint64_t cap_bytes = 0;   // the configured cap for this device; 0: none
  uint64_t usable() const { return cap_bytes > 0 && cap_bytes < free_bytes ? cap_bytes : free_bytes; }
};

struct PlacementRequest {
  ModelFootprint model;
  std::vector<DeviceMemory> devices;  // the offload devices in order; empty: CPU only
  // Units to offload: kAllLayers, kFitLayers (as many as fit), or a count (llama.cpp's
  // n_gpu_layers: the last N units, the output head first).
  int32_t gpu_layers = 0;
  SplitMode split_mode = SplitMode::kLayer;
  size_t main_device = 0;            // index into devices; holds everything with kNone
  std::vector<float> tensor_split;   // the user's proportions per device; empty: by memory

  static constexpr int32_t kAllLayers = -1;
  static constexpr int32_t kFitLayers = -2;
};

struct PlacementPlan {
  struct Part {
    std::string device;       // "CPU" first, then each device
    int32_t first_layer = 0;  // the unit range [first_layer, first_layer + layers)
    int32_t layers = 0;       // repeating layers held
    bool output = false;      // holds the output head
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;
    uint64_t compute_bytes = 0;
    uint64_t budget_bytes = 0;  // what the device can give (0 for the CPU: not planned)
    uint64_t total() const { return weight_bytes + kv_bytes + compute_bytes; }
  };
  std::vector<Part> parts;         // parts[0] is the CPU
  int32_t gpu_layers = 0;          // for llama.cpp's n_gpu_layers
  std::vector<float> tensor_split; // for llama.cpp: units per device (empty: CPU only)
  std::string why;                 // how the split was chosen, for the log

  // "RPC0 layers 0-13 weights 180.2 MiB kv 56.0 MiB compute 16.0 MiB of 300.0 MiB", one per part.
  std::vector<std::string> Describe() const;
};

// The plan, or ResourceExhausted saying what does not fit where (and, when some layers
// would fit, how many), or InvalidArgument for an impossible request.
Result<PlacementPlan> PlanPlacement(const PlacementRequest& request);

// "3.5G", "512M", "64K", "1000" (bytes) into bytes; binary units.
Result<uint64_t> ParseByteSize(const std::string& text);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_PLACEMENT_PLAN_H_
