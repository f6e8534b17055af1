#include "engine/llama/llama_placement.h"

#include <algorithm>
#include <string>

#include "engine/llama/llama_engine.h"
// llama.cpp's staging API: the per-buffer memory breakdown of a context (what
// llama-server's memory table prints). Used read-only, after loading.
#include "llama-ext.h"

namespace llmd::engine {
namespace {

// What llama.cpp picks when no device is named (llama.cpp's llama_prepare_model_devices):
// RPC servers first, then GPUs, then integrated GPUs when there is no discrete one.
std::vector<std::string> DefaultOffloadDevices() {
  std::vector<std::string> rpc, gpus, igpus;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    const std::string name = ggml_backend_dev_name(dev);
    switch (ggml_backend_dev_type(dev)) {
      case GGML_BACKEND_DEVICE_TYPE_GPU:
        (std::string(ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev))) == "RPC" ? rpc : gpus).push_back(name);
        break;
      case GGML_BACKEND_DEVICE_TYPE_IGPU: igpus.push_back(name); break;
      default: break;
    }
  }
  rpc.insert(rpc.end(), gpus.begin(), gpus.end());
  if (gpus.empty()) rpc.insert(rpc.end(), igpus.begin(), igpus.end());
  return rpc;
}

Result<ggml_backend_dev_t> DeviceByName(const std::string& name) {
  ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
  if (dev == nullptr) {
    return InvalidArgumentError("unknown device '" + name + "'; this build has: " + JoinDeviceNames());
  }
  return dev;
}

}  // namespace

std::string JoinDeviceNames() {
  std::string all;
  for (const auto& name : ListLlamaDevices()) all += (all.empty() ? "" : ", ") + name;
  return all;
}

void LlamaPlacement::Apply(llama_model_params* params) const {
  params->devices = const_cast<ggml_backend_dev_t*>(devices.data());
  params->n_gpu_layers = plan.gpu_layers;
  params->split_mode = split_mode;
  params->main_gpu = main_gpu;
  params->tensor_split = tensor_split.data();
}

Result<LlamaPlacement> PlanLlamaPlacement(const EngineConfig& config, const format::GgufSummary& gguf,
                                          ggml_type kv_type) {
  std::vector<std::string> names = config.devices;
  if (names.empty() && config.gpu_layers != 0) names = DefaultOffloadDevices();

  PlacementRequest request;
  request.gpu_layers = config.gpu_layers;
  request.split_mode = config.split_mode;
  request.tensor_split = config.tensor_split;
  LlamaPlacement out;
  for (const auto& name : names) {
    LLMD_ASSIGN_OR_RETURN(ggml_backend_dev_t dev, DeviceByName(name));
    if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
      if (names.size() == 1) continue;  // "--device CPU": nothing to offload
      return InvalidArgumentError("devices: CPU cannot be split with other devices; the layers not "
                                  "offloaded stay on the CPU (see gpu_layers)");
    }
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    request.devices.push_back({name, free, 0});
    out.devices.push_back(dev);
  }
  for (const auto& cap : config.device_caps) {
    auto it = std::find_if(request.devices.begin(), request.devices.end(),
                           [&](const DeviceMemory& d) { return d.name == cap.device; });
    if (it == request.devices.end()) {
      return InvalidArgumentError("device_memory names " + cap.device + ", which is not one of the devices in use");
    }
    it->cap_bytes = cap.bytes;
  }
  if (!config.main_device.empty()) {
    auto it = std::find_if(request.devices.begin(), request.devices.end(),
                           [&](const DeviceMemory& d) { return d.name == config.main_device; });
    if (it == request.devices.end()) {
      return InvalidArgumentError("main_device " + config.main_device + " is not one of the devices in use");
    }
    request.main_device = static_cast<size_t>(it - request.devices.begin());
  }

  const uint32_t ubatch = static_cast<uint32_t>(std::min(config.batch_tokens, 512));
  const double kv_bytes_per_value = static_cast<double>(ggml_type_size(kv_type)) / ggml_blck_size(kv_type);
  // "auto" may turn flash attention off on a backend without it: plan for the scores then.
  request.model = ModelFootprint::FromGguf(gguf, static_cast<uint32_t>(config.context_tokens),
                                           static_cast<uint32_t>(config.sequences), kv_bytes_per_value, ubatch,
                                           LlamaOutputsPerStep(config), config.flash_attention == "on",
                                           LlamaSpeculation(config, gguf), static_cast<uint32_t>(config.pool_tokens));
  LLMD_ASSIGN_OR_RETURN(out.plan, PlanPlacement(request));

  // llama.cpp keeps only the main device with split mode none: hand it just that one.
  if (config.split_mode == SplitMode::kNone && !out.devices.empty()) {
    out.devices = {out.devices[request.main_device]};
    out.plan.tensor_split = {static_cast<float>(out.plan.gpu_layers)};
  }
  out.split_mode = config.split_mode == SplitMode::kRow    ? LLAMA_SPLIT_MODE_ROW
                   : config.split_mode == SplitMode::kNone ? LLAMA_SPLIT_MODE_NONE
                                                           : LLAMA_SPLIT_MODE_LAYER;
  out.main_gpu = config.split_mode == SplitMode::kNone ? 0 : static_cast<int32_t>(request.main_device);
  out.devices.push_back(nullptr);
  out.tensor_split.assign(std::max<size_t>(llama_max_devices(), out.plan.tensor_split.size()), 0.0f);
  std::copy(out.plan.tensor_split.begin(), out.plan.tensor_split.end(), out.tensor_split.begin());
  return out;
}

std::vector<DevicePlacement> MeasurePlacement(const llama_context* ctx, const PlacementPlan& plan) {
  std::vector<DevicePlacement> out;
  for (const auto& part : plan.parts) {
    out.push_back({.device = part.device, .layers = part.layers, .output = part.output, .planned_bytes = part.total(),
                   .planned_weight_bytes = part.weight_bytes});
  }
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx)) {
    std::string device = "CPU";
    if (!ggml_backend_buft_is_host(buft)) {
      ggml_backend_dev_t dev = ggml_backend_buft_get_device(buft);
      if (dev != nullptr) device = ggml_backend_dev_name(dev);
    }
    auto it = std::find_if(out.begin(), out.end(), [&](const DevicePlacement& d) { return d.device == device; });
    if (it == out.end()) it = out.insert(out.end(), {.device = device});
    it->model_bytes += mb.model;
    it->context_bytes += mb.context;
    it->compute_bytes += mb.compute;
  }
  return out;
}

}  // namespace llmd::engine
