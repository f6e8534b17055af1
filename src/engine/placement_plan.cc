#include "engine/placement_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace llmd::engine {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

// The units (layers 0..n-1, then the output head) and what each costs where it goes.
class Units {
 public:
  explicit Units(const ModelFootprint& m) : m_(m) {}
  int32_t count() const { return static_cast<int32_t>(m_.layer_bytes.size()) + 1; }
  bool is_output(int32_t u) const { return u == count() - 1; }
  uint64_t weights(int32_t u) const {
    return is_output(u) ? m_.output_bytes + m_.tied_output_bytes : m_.layer_bytes[u];
  }
  uint64_t kv(int32_t u) const {
    return is_output(u) || static_cast<size_t>(u) >= m_.layer_memory_bytes.size() ? 0 : m_.layer_memory_bytes[u];
  }

  // The part holding units [first, first + n) on `device`.
  PlacementPlan::Part Part(const std::string& device, int32_t first, int32_t n, uint64_t budget) const {
    PlacementPlan::Part p;
    p.device = device;
    p.first_layer = first;
    p.budget_bytes = budget;
    for (int32_t u = first; u < first + n; ++u) {
      p.weight_bytes += weights(u);
      p.kv_bytes += kv(u);
      if (is_output(u)) {
        p.output = true;
      } else {
        ++p.layers;
      }
    }
    if (n > 0) p.compute_bytes = m_.compute_bytes + (p.output ? m_.logits_bytes : 0);
    return p;
  }

 private:
  const ModelFootprint& m_;
};

bool Fits(const PlacementPlan::Part& p) { return p.total() <= p.budget_bytes; }

// llama.cpp's own mapping from split proportions to units (llama-model.cpp, load_tensors):
// offloaded unit j goes to the first device whose cumulative share exceeds j / k.
std::vector<int32_t> CountsFromProportions(const std::vector<float>& proportions, int32_t k) {
  std::vector<float> splits(proportions.size());
  float sum = 0;
  for (size_t i = 0; i < proportions.size(); ++i) splits[i] = sum += proportions[i];
  for (float& s : splits) s /= sum;
  std::vector<int32_t> counts(proportions.size(), 0);
  for (int32_t j = 0; j < k; ++j) {
    size_t d = std::upper_bound(splits.begin(), splits.end(), float(j) / k) - splits.begin();
    ++counts[std::min(d, counts.size() - 1)];
  }
  return counts;
}

// Contiguous runs in device order whose weights and KV follow the devices' usable memory.
std::vector<int32_t> CountsByMemory(const Units& units, const std::vector<DeviceMemory>& devices, int32_t first) {
  double total = 0, memory = 0;
  for (int32_t u = first; u < units.count(); ++u) total += units.weights(u) + units.kv(u);
  for (const auto& d : devices) memory += d.usable();
  std::vector<int32_t> counts(devices.size(), 0);
  int32_t u = first;
  double done = 0, target = 0;
  for (size_t d = 0; d + 1 < devices.size(); ++d) {
    target += memory > 0 ? total * devices[d].usable() / memory : 0;
    // Take the next unit while that ends nearer the target than stopping does.
    while (u < units.count() && done + (units.weights(u) + units.kv(u)) / 2.0 <= target) {
      done += units.weights(u) + units.kv(u);
      ++counts[d];
      ++u;
    }
  }
  counts.back() += units.count() - u;
  return counts;
}

// Each device in order takes as many units as it can hold.
std::vector<int32_t> CountsByFilling(const Units& units, const std::vector<DeviceMemory>& devices, int32_t first) {
  std::vector<int32_t> counts(devices.size(), 0);
  int32_t u = first;
  for (size_t d = 0; d < devices.size(); ++d) {
    while (u < units.count() && Fits(units.Part(devices[d].name, u - counts[d], counts[d] + 1, devices[d].usable()))) {
      ++counts[d];
      ++u;
    }
  }
  if (u < units.count()) counts.back() += units.count() - u;  // does not fit; reported by the caller
  return counts;
}

PlacementPlan Assemble(const Units& units, const ModelFootprint& model, const std::vector<DeviceMemory>& devices,
                       int32_t first, const std::vector<int32_t>& counts) {
  PlacementPlan plan;
  plan.parts.push_back(units.Part("CPU", 0, first, 0));
  plan.parts[0].weight_bytes += model.input_bytes;
  if (plan.parts[0].output) plan.parts[0].weight_bytes -= model.tied_output_bytes;  // the same tensor there
  plan.parts[0].compute_bytes = std::max(plan.parts[0].compute_bytes, model.compute_bytes);  // always some
  int32_t at = first;
  for (size_t d = 0; d < devices.size(); ++d) {
    plan.parts.push_back(units.Part(devices[d].name, at, counts[d], devices[d].usable()));
    at += counts[d];
    plan.tensor_split.push_back(static_cast<float>(counts[d]));
  }
  plan.gpu_layers = units.count() - first;
  return plan;
}

bool AllFit(const PlacementPlan& plan) {
  return std::all_of(plan.parts.begin() + 1, plan.parts.end(), Fits);
}

// The plan that offloads the last k units, or the one with the smallest overflow.
PlacementPlan PlanOffload(const Units& units, const PlacementRequest& r, int32_t k) {
  const int32_t first = units.count() - k;
  if (r.split_mode == SplitMode::kNone) {
    std::vector<int32_t> counts(r.devices.size(), 0);
    counts[r.main_device] = k;
    PlacementPlan plan = Assemble(units, r.model, r.devices, first, counts);
    plan.why = "split_mode none: everything offloaded on " + r.devices[r.main_device].name;
    return plan;
  }
  if (!r.tensor_split.empty()) {
    std::vector<float> proportions = r.tensor_split;
    proportions.resize(r.devices.size(), 0.0f);
    PlacementPlan plan = Assemble(units, r.model, r.devices, first, CountsFromProportions(proportions, k));
    plan.why = "tensor_split as configured";
    return plan;
  }
  PlacementPlan plan = Assemble(units, r.model, r.devices, first, CountsByMemory(units, r.devices, first));
  plan.why = "in proportion to each device's usable memory";
  if (AllFit(plan)) return plan;
  plan = Assemble(units, r.model, r.devices, first, CountsByFilling(units, r.devices, first));
  plan.why = "each device filled in order (a proportional split would not fit)";
  return plan;
}

std::string Overflow(const PlacementPlan& plan) {
  std::string out;
  for (size_t i = 1; i < plan.parts.size(); ++i) {
    const auto& p = plan.parts[i];
    if (Fits(p)) continue;
    if (!out.empty()) out += "; ";
    out += p.device + " would need " + Mib(p.total()) + " (weights " + Mib(p.weight_bytes) + ", KV " +
           Mib(p.kv_bytes) + ", compute " + Mib(p.compute_bytes) + ") but can give " + Mib(p.budget_bytes);
  }
  return out;
}

Status Validate(const PlacementRequest& r) {
  if (r.gpu_layers < PlacementRequest::kFitLayers) {
    return InvalidArgumentError("gpu_layers must be -1 (all), \"fit\" or a count >= 0");
  }
  if (r.devices.empty()) return Status::Ok();
  if (r.main_device >= r.devices.size()) return InvalidArgumentError("main_device is not one of the devices");
  if (r.tensor_split.size() > r.devices.size()) {
    return InvalidArgumentError("tensor_split has " + std::to_string(r.tensor_split.size()) +
                                " values for " + std::to_string(r.devices.size()) + " devices");
  }
  float sum = 0;
  for (float f : r.tensor_split) {
    if (!std::isfinite(f) || f < 0) return InvalidArgumentError("tensor_split values must be >= 0");
    sum += f;
  }
  if (!r.tensor_split.empty() && sum <= 0) return InvalidArgumentError("tensor_split must not be all zero");
  return Status::Ok();
}

}  // namespace

ModelFootprint ModelFootprint::FromGguf(const format::GgufSummary& gguf, uint32_t context_tokens, uint32_t sequences,
                                        double kv_bytes_per_value, uint32_t ubatch, uint32_t outputs,
                                        bool flash_attention, SpeculationFootprint speculation,
                                        uint32_t pool_tokens) {
  ModelFootprint m;
  const uint64_t cells = pool_tokens > 0 ? uint64_t{pool_tokens} : uint64_t{context_tokens} * sequences;
  m.layer_bytes = gguf.layer_bytes;
  if (m.layer_bytes.size() < gguf.block_count) m.layer_bytes.resize(gguf.block_count, 0);
  m.output_bytes = gguf.output_bytes;
  m.input_bytes = gguf.input_bytes;
  m.tied_output_bytes = gguf.tied_output_bytes;
  const auto kv_bytes = static_cast<uint64_t>(
      std::ceil(static_cast<double>(cells) * gguf.head_count_kv * (gguf.key_length + gguf.value_length) *
                kv_bytes_per_value));
  // A recurrent layer holds one F32 state per sequence, whatever the context (llama-hparams.cpp
  // n_embd_r + n_embd_s).
  const uint64_t conv = static_cast<uint64_t>(gguf.ssm_conv_kernel > 0 ? gguf.ssm_conv_kernel - 1 : 0) *
                        (gguf.ssm_inner_size + 2ull * gguf.ssm_group_count * gguf.ssm_state_size);
  // ... and with speculative decoding, one more per rollback snapshot.
  const uint64_t state_bytes = (conv + static_cast<uint64_t>(gguf.ssm_state_size) * gguf.ssm_inner_size) * 4 *
                               sequences * (1ull + speculation.state_snapshots);
  const size_t trunk = m.layer_bytes.size() - std::min<size_t>(gguf.nextn_layers, m.layer_bytes.size());
  m.layer_memory_bytes.resize(m.layer_bytes.size());
  for (size_t i = 0; i < m.layer_memory_bytes.size(); ++i) {
    if (i >= trunk) {
      // An MTP block: one attention layer with a cache of its own (a second context), when loaded.
      if (!speculation.mtp) m.layer_bytes[i] = 0;
      m.layer_memory_bytes[i] = speculation.mtp ? kv_bytes : 0;
      continue;
    }
    const bool attention = gguf.full_attention_interval == 0 || (i + 1) % gguf.full_attention_interval == 0;
    m.layer_memory_bytes[i] = attention ? kv_bytes : state_bytes;
  }
  // llama.cpp's scheduler buffers, estimated from above (the daemon logs the estimate beside
  // what llama.cpp allocated; on Qwen3 tiny and 0.6B shapes over RPC the estimate is 5-30 %
  // high): one micro-batch of activations, the attention mask over every cell, the attention
  // scores of one sequence when flash attention is off, and the logits of the outputs a step
  // asks for where the output head runs.
  const uint64_t u = ubatch;
  m.compute_bytes = u * gguf.embedding_length * 64 + u * cells * 4;
  if (!flash_attention) m.compute_bytes += u * context_tokens * gguf.head_count * 6;
  m.logits_bytes = uint64_t{outputs} * gguf.vocab_size * 4;
  return m;
}

std::vector<std::string> PlacementPlan::Describe() const {
  std::vector<std::string> lines;
  for (const auto& p : parts) {
    std::string line = p.device;
    if (p.layers > 0) {
      line += " layers " + std::to_string(p.first_layer) + "-" + std::to_string(p.first_layer + p.layers - 1);
    } else {
      line += " no layers";
    }
    if (p.output) line += " + output";
    line += ", weights " + Mib(p.weight_bytes) + ", KV " + Mib(p.kv_bytes) + ", compute " + Mib(p.compute_bytes);
    if (p.budget_bytes > 0) line += ", of " + Mib(p.budget_bytes);
    lines.push_back(std::move(line));
  }
  return lines;
}

Result<PlacementPlan> PlanPlacement(const PlacementRequest& r) {
  LLMD_RETURN_IF_ERROR(Validate(r));
  const Units units(r.model);
  if (r.devices.empty() || r.gpu_layers == 0) {
    PlacementPlan plan = Assemble(units, r.model, {}, units.count(), {});
    plan.why = r.devices.empty() ? "no devices configured: everything on the CPU" : "gpu_layers = 0";
    return plan;
  }
  if (r.gpu_layers == PlacementRequest::kFitLayers) {
    for (int32_t k = units.count(); k > 0; --k) {
      PlacementPlan plan = PlanOffload(units, r, k);
      if (AllFit(plan)) {
        plan.why += "; " + std::to_string(k) + " of " + std::to_string(units.count()) +
                    " units fit (gpu_layers = fit)";
        return plan;
      }
    }
    return ResourceExhaustedError("not even the output head fits on the devices: " +
                                  Overflow(PlanOffload(units, r, 1)) + " (its logits alone take " +
                                  Mib(r.model.logits_bytes) + " per micro-batch: a smaller batch_tokens shrinks them)");
  }
  const int32_t k = r.gpu_layers == PlacementRequest::kAllLayers ? units.count()
                                                                  : std::min(r.gpu_layers, units.count());
  PlacementPlan plan = PlanOffload(units, r, k);
  if (AllFit(plan)) return plan;
  int32_t fitting = 0;
  for (int32_t j = k - 1; j > 0 && fitting == 0; --j) {
    if (AllFit(PlanOffload(units, r, j))) fitting = j;
  }
  return ResourceExhaustedError(
      "the model does not fit with " + std::to_string(k) + " of " + std::to_string(units.count()) +
      " layers offloaded (" + plan.why + "): " + Overflow(plan) +
      (fitting > 0 ? "; " + std::to_string(fitting) + " would fit: set gpu_layers = " + std::to_string(fitting) +
                         " or \"fit\""
                   : "; not even the output head fits (its logits alone take " + Mib(r.model.logits_bytes) +
                         " per micro-batch: a smaller batch_tokens shrinks them)"));
}

Result<uint64_t> ParseByteSize(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return InvalidArgumentError("'" + text + "' is not a size such as 3.5G or 512M");
  }
  std::string unit = text.substr(used);
  if (unit.ends_with("iB")) unit.resize(unit.size() - 2);
  else if (unit.ends_with("B")) unit.resize(unit.size() - 1);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1}, {"K", 1024.0}, {"M", kMiB}, {"G", kMiB * 1024}, {"T", kMiB * 1024 * 1024}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name || (unit.size() == 1 && std::toupper(unit[0]) == name[0])) {
      const double bytes = value * scale;
      if (!std::isfinite(bytes) || bytes < 0 || bytes > 1.8e19) {
        return InvalidArgumentError("'" + text + "' is out of range");
      }
      return static_cast<uint64_t>(bytes);
    }
  }
  return InvalidArgumentError("'" + text + "' has an unknown unit (use K, M, G or T)");
}

}  // namespace llmd::engine
