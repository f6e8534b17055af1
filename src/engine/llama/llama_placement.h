// The placement planner (engine/placement_plan.h) applied to llama.cpp: resolves the
// configured devices, asks each for its free memory, plans, and turns the plan into
// llama_model_params; after loading, reads back what llama.cpp allocated on each device.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_PLACEMENT_H_
#define LLMD_ENGINE_LLAMA_LLAMA_PLACEMENT_H_

#include <algorithm>
#include <vector>

#include "engine/engine.h"
#include "engine/placement_plan.h"
#include "format/gguf_precheck.h"
#include "ggml-backend.h"
#include "llama.h"
#include "llmd/result.h"

namespace llmd::engine {

struct LlamaPlacement {
  PlacementPlan plan;
  std::vector<ggml_backend_dev_t> devices;  // null-terminated, for llama_model_params
  std::vector<float> tensor_split;          // llama_max_devices() entries
  llama_split_mode split_mode = LLAMA_SPLIT_MODE_LAYER;
  int32_t main_gpu = 0;

  // Points `params` at this placement (which must outlive the load).
  void Apply(llama_model_params* params) const;
};

// The configured devices (or, with none named and layers to offload, llama.cpp's default:
// RPC servers, then GPUs, then integrated GPUs when there is no GPU), planned. InvalidArgument
// for an unknown device or cap name; ResourceExhausted when the model cannot fit.
inline bool Speculating(const EngineConfig& config) {
  return config.speculative.mode != SpeculativeMode::kOff && !config.embeddings;
}

// The outputs (logits) one decode step may ask for, as the context reserves them: one per
// sequence when generating (with speculative decoding, one more per draft token, within the
// step's tokens), every token of a micro-batch for embeddings.
inline uint32_t LlamaOutputsPerStep(const EngineConfig& config) {
  if (config.embeddings) return static_cast<uint32_t>(config.batch_tokens);
  if (!Speculating(config)) return static_cast<uint32_t>(config.sequences);
  const int64_t wanted = static_cast<int64_t>(config.sequences) * (1 + config.speculative.draft_max);
  return static_cast<uint32_t>(std::max<int64_t>(config.sequences, std::min<int64_t>(wanted, config.batch_tokens)));
}

// What speculative decoding adds to the target's memory, as LlamaEngine sets it up: on a
// recurrent or hybrid model one state snapshot per draft token (n_rs_seq), and with kMtp the
// MTP blocks' weights and cache.
inline SpeculationFootprint LlamaSpeculation(const EngineConfig& config, const format::GgufSummary& gguf) {
  SpeculationFootprint s;
  if (!Speculating(config)) return s;
  if (gguf.ssm_state_size > 0) s.state_snapshots = static_cast<uint32_t>(config.speculative.draft_max);
  s.mtp = config.speculative.mode == SpeculativeMode::kMtp;
  return s;
}

Result<LlamaPlacement> PlanLlamaPlacement(const EngineConfig& config, const format::GgufSummary& gguf,
                                          ggml_type kv_type);

// The plan per device with what llama.cpp actually allocated there (host buffers count as
// the CPU's).
std::vector<DevicePlacement> MeasurePlacement(const llama_context* ctx, const PlacementPlan& plan);

// The device list as text ("CPU, RPC0, RPC1"), for messages.
std::string JoinDeviceNames();

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_PLACEMENT_H_
