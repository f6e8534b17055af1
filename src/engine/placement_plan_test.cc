// The placement planner on the synthetic writer's model shapes (tools/mkmodel/model_shapes.h):
// Qwen3-0.6B and -1.7B geometry with the bytes llama.cpp would allocate for them.
#include "engine/placement_plan.h"

#include <gtest/gtest.h>

#include <numeric>

#include "tools/mkmodel/model_shapes.h"

namespace llmd::engine {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kGiB = kMiB << 10;
constexpr uint64_t kVocab = 151936;

// What a Qwen3 model of `shape` needs, with weights of `bytes_per_weight` (Q4_0 18/32, F16 2),
// tied embeddings (as the writer makes them), an f16 KV cache of `cells` and a 512 micro-batch.
ModelFootprint Qwen3(std::string_view name, double bytes_per_weight, uint32_t context = 4096) {
  const mkmodel::ModelShape& s = *mkmodel::FindShape(name);
  const double e = s.embedding, h = s.heads, kv = s.kv_heads, d = s.head_dim, f = s.feed_forward;
  const double matrices = e * h * d + 2 * e * kv * d + h * d * e + 3 * e * f;
  const double norms = 2 * e + 2 * d;
  format::GgufSummary g;
  g.block_count = static_cast<uint32_t>(s.layers);
  g.embedding_length = static_cast<uint32_t>(s.embedding);
  g.head_count = static_cast<uint32_t>(s.heads);
  g.head_count_kv = static_cast<uint32_t>(s.kv_heads);
  g.key_length = g.value_length = static_cast<uint32_t>(s.head_dim);
  g.vocab_size = kVocab;
  g.layer_bytes.assign(s.layers, static_cast<uint64_t>(matrices * bytes_per_weight + norms * 4));
  g.input_bytes = static_cast<uint64_t>(kVocab * e * bytes_per_weight);
  g.output_bytes = static_cast<uint64_t>(e * 4);
  g.tied_output_bytes = g.input_bytes;
  return ModelFootprint::FromGguf(g, context, 1, 2.0, 512, 1, true);
}

DeviceMemory Device(std::string name, uint64_t free, uint64_t cap = 0) { return {std::move(name), free, cap}; }

int32_t Units(const PlacementPlan& plan) {
  int32_t n = 0;
  for (const auto& p : plan.parts) n += p.layers + (p.output ? 1 : 0);
  return n;
}

// Every part holds a contiguous run that starts where the previous one ended.
void ExpectContiguous(const PlacementPlan& plan) {
  int32_t next = 0;
  for (const auto& p : plan.parts) {
    if (p.layers == 0 && !p.output) continue;
    EXPECT_EQ(p.first_layer, next) << p.device;
    next = p.first_layer + p.layers + (p.output ? 1 : 0);
  }
}

TEST(PlacementPlan, FootprintFollowsTheShape) {
  ModelFootprint m = Qwen3("0.6b", 18.0 / 32);
  ASSERT_EQ(m.layer_bytes.size(), 28u);
  // 28 layers x 8 KV heads x (128 + 128) x 2 bytes per cell: 112 KiB per cell, 16 MiB per layer at 4096.
  ASSERT_EQ(m.layer_memory_bytes.size(), 28u);
  for (uint64_t b : m.layer_memory_bytes) EXPECT_EQ(b, 4096ull * 8 * 256 * 2);
  EXPECT_EQ(m.logits_bytes, 1ull * kVocab * 4);  // one output: generation samples one token a sequence
  EXPECT_NEAR(static_cast<double>(m.input_bytes) / kMiB, 83.5, 0.5);
}

// A Qwen3.5-0.8B-shaped hybrid of 24 layers, 10 MiB each, and `mtp_blocks` MTP blocks after them.
format::GgufSummary Qwen35Summary(uint32_t mtp_blocks = 0) {
  format::GgufSummary g;
  g.block_count = 24 + mtp_blocks;
  g.nextn_layers = mtp_blocks;
  g.embedding_length = 1024;
  g.head_count = 8;
  g.head_count_kv = 2;
  g.key_length = g.value_length = 256;
  g.vocab_size = kVocab;
  g.layer_bytes.assign(g.block_count, 10 * kMiB);
  g.full_attention_interval = 4;
  g.ssm_conv_kernel = 4;
  g.ssm_inner_size = 2048;
  g.ssm_state_size = 128;
  g.ssm_group_count = 16;
  return g;
}

// Only every fourth layer of the hybrid holds attention KV; the other 18 hold a recurrent
// state per sequence whose size does not depend on the context.
TEST(PlacementPlan, HybridLayersHoldARecurrentStateNotAKvCache) {
  const format::GgufSummary g = Qwen35Summary();
  const ModelFootprint m = ModelFootprint::FromGguf(g, 2048, 4, 2.0, 512, 4, true);
  ASSERT_EQ(m.layer_memory_bytes.size(), 24u);
  const uint64_t kv = 4ull * 2048 * 2 * (256 + 256) * 2;            // cells x KV heads x (K + V) x f16
  const uint64_t state = (3ull * (2048 + 2 * 16 * 128) + 128ull * 2048) * 4 * 4;  // conv + state, F32, 4 slots
  uint64_t total = 0;
  for (size_t i = 0; i < 24; ++i) {
    EXPECT_EQ(m.layer_memory_bytes[i], (i + 1) % 4 == 0 ? kv : state) << "layer " << i;
    total += m.layer_memory_bytes[i];
  }
  EXPECT_EQ(total, 6 * kv + 18 * state);
  EXPECT_LT(total, 24 * kv) << "a dense estimate over-counts the hybrid";
}

// The same hybrid with an MTP block after its 24 layers: the block counts (weights and a KV
// cache of its own) only when it drafts, and speculation on recurrent memory keeps a state
// snapshot per draft token.
TEST(PlacementPlan, SpeculationCountsTheMtpBlockAndTheStateSnapshots) {
  const format::GgufSummary g = Qwen35Summary(/*mtp_blocks=*/1);
  const uint64_t kv = 4ull * 2048 * 2 * (256 + 256) * 2;
  const uint64_t state = (3ull * (2048 + 2 * 16 * 128) + 128ull * 2048) * 4 * 4;
  const ModelFootprint off = ModelFootprint::FromGguf(g, 2048, 4, 2.0, 512, 4, true);
  EXPECT_EQ(off.layer_bytes[24], 0u) << "llama.cpp skips the MTP block unless it drafts";
  EXPECT_EQ(off.layer_memory_bytes[24], 0u);
  EXPECT_EQ(off.layer_memory_bytes[0], state);
  const ModelFootprint mtp = ModelFootprint::FromGguf(g, 2048, 4, 2.0, 512, 4 * 5, true, {.state_snapshots = 4, .mtp = true});
  EXPECT_EQ(mtp.layer_bytes[24], 10 * kMiB);
  EXPECT_EQ(mtp.layer_memory_bytes[24], kv);
  EXPECT_EQ(mtp.layer_memory_bytes[0], 5 * state);  // the state and 4 snapshots
  EXPECT_EQ(mtp.layer_memory_bytes[3], kv);
}

TEST(PlacementPlan, NoDevicesKeepsEverythingOnTheCpu) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32)};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  ASSERT_EQ(plan->parts.size(), 1u);
  EXPECT_EQ(plan->parts[0].device, "CPU");
  EXPECT_EQ(plan->parts[0].layers, 28);
  EXPECT_TRUE(plan->parts[0].output);
  EXPECT_EQ(plan->gpu_layers, 0);
  EXPECT_TRUE(plan->tensor_split.empty());
  // The tied head is the embeddings tensor itself on the CPU: counted once.
  EXPECT_EQ(plan->parts[0].weight_bytes, r.model.input_bytes + r.model.output_bytes +
                                             std::accumulate(r.model.layer_bytes.begin(), r.model.layer_bytes.end(), 0ull));
}

TEST(PlacementPlan, AllLayersOnOneAmpleDevice) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("CUDA0", 8 * kGiB)},
                     .gpu_layers = PlacementRequest::kAllLayers};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->gpu_layers, 29);
  EXPECT_EQ(plan->parts[0].layers, 0);
  EXPECT_EQ(plan->parts[0].weight_bytes, r.model.input_bytes) << "the embeddings stay on the CPU";
  EXPECT_EQ(plan->parts[1].layers, 28);
  EXPECT_TRUE(plan->parts[1].output);
  EXPECT_EQ(plan->parts[1].kv_bytes, 28 * r.model.layer_memory_bytes[0]);
  EXPECT_EQ(plan->parts[1].compute_bytes, r.model.compute_bytes + r.model.logits_bytes);
  EXPECT_EQ(plan->tensor_split, std::vector<float>{29});
}

TEST(PlacementPlan, SplitsInProportionToUsableMemory) {
  PlacementRequest r{.model = Qwen3("1.7b", 18.0 / 32),
                     .devices = {Device("RPC0", 1 * kGiB), Device("RPC1", 3 * kGiB)},
                     .gpu_layers = PlacementRequest::kAllLayers};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  ExpectContiguous(*plan);
  EXPECT_EQ(Units(*plan), 29);
  const auto& a = plan->parts[1];
  const auto& b = plan->parts[2];
  const double share = static_cast<double>(a.weight_bytes + a.kv_bytes) /
                       (a.weight_bytes + a.kv_bytes + b.weight_bytes + b.kv_bytes);
  EXPECT_NEAR(share, 0.25, 0.03) << plan->Describe()[1];
  EXPECT_TRUE(b.output);
  // llama.cpp, given the plan's tensor_split, maps the same layers to the same devices.
  PlacementRequest again = r;
  again.tensor_split = plan->tensor_split;
  auto replay = PlanPlacement(again);
  ASSERT_TRUE(replay.has_value());
  EXPECT_EQ(replay->parts[1].layers, a.layers);
  EXPECT_EQ(replay->parts[2].layers, b.layers);
}

TEST(PlacementPlan, AHexagonSessionCapRefusesWhatDoesNotFitAndSaysWhatWould) {
  // 1.7B in F16 is ~3.8 GiB of weights: more than one ~3.5 GB HTP session can map.
  PlacementRequest r{.model = Qwen3("1.7b", 2.0), .devices = {Device("HTP0", 16 * kGiB, 3500 * kMiB)},
                     .gpu_layers = PlacementRequest::kAllLayers};
  auto plan = PlanPlacement(r);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kResourceExhausted);
  const std::string msg = plan.error().message();
  EXPECT_NE(msg.find("HTP0 would need"), std::string::npos) << msg;
  EXPECT_NE(msg.find("can give 3500.0 MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("would fit: set gpu_layers = "), std::string::npos) << msg;

  // Two sessions on the NPU (HTP0, HTP1, each capped) hold it, split between them.
  r.devices = {Device("HTP0", 16 * kGiB, 3500 * kMiB), Device("HTP1", 16 * kGiB, 3500 * kMiB)};
  plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_GT(plan->parts[1].layers, 10);
  EXPECT_GT(plan->parts[2].layers, 10);
  for (size_t i = 1; i < plan->parts.size(); ++i) {
    EXPECT_LE(plan->parts[i].total(), 3500 * kMiB) << plan->Describe()[i];
  }
}

TEST(PlacementPlan, FitOffloadsAsManyLayersAsFitAndNoMore) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("HTP0", 16 * kGiB, 700 * kMiB)},
                     .gpu_layers = PlacementRequest::kFitLayers};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  const int32_t k = plan->gpu_layers;
  EXPECT_GT(k, 1);
  EXPECT_LT(k, 29);
  EXPECT_LE(plan->parts[1].total(), 700 * kMiB);
  EXPECT_EQ(plan->parts[0].layers + plan->parts[1].layers, 28);
  r.gpu_layers = k + 1;
  EXPECT_FALSE(PlanPlacement(r).has_value()) << "one more unit would not fit";
  r.gpu_layers = k;
  EXPECT_TRUE(PlanPlacement(r).has_value());
}

TEST(PlacementPlan, ACountOffloadsTheLastUnitsHeadFirst) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("CUDA0", 8 * kGiB)}, .gpu_layers = 5};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->parts[0].layers, 24);
  EXPECT_FALSE(plan->parts[0].output);
  EXPECT_EQ(plan->parts[1].first_layer, 24);
  EXPECT_EQ(plan->parts[1].layers, 4);
  EXPECT_TRUE(plan->parts[1].output);
  r.gpu_layers = 1;  // llama.cpp's n_gpu_layers = 1 is the head alone
  plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->parts[1].layers, 0);
  EXPECT_TRUE(plan->parts[1].output);
  r.gpu_layers = 1000;  // more than the model has: all of it
  EXPECT_EQ(PlanPlacement(r)->gpu_layers, 29);
}

TEST(PlacementPlan, AConfiguredTensorSplitIsLlamaCppsMapping) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32),
                     .devices = {Device("CUDA0", 8 * kGiB), Device("CUDA1", 8 * kGiB)},
                     .gpu_layers = PlacementRequest::kAllLayers, .tensor_split = {1, 1}};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  // Unit j of 29 goes to the first device whose cumulative share exceeds j/29: 0..14 | 15..28.
  EXPECT_EQ(plan->parts[1].layers, 15);
  EXPECT_EQ(plan->parts[2].layers, 13);
  EXPECT_TRUE(plan->parts[2].output);
  r.tensor_split = {0, 1};  // a zero share skips the device
  plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->parts[1].layers, 0);
  EXPECT_EQ(plan->parts[2].layers, 28);
}

TEST(PlacementPlan, SplitModeNonePutsEverythingOnTheMainDevice) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32),
                     .devices = {Device("CUDA0", 8 * kGiB), Device("CUDA1", 8 * kGiB)},
                     .gpu_layers = PlacementRequest::kAllLayers, .split_mode = SplitMode::kNone, .main_device = 1};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->parts[1].layers, 0);
  EXPECT_EQ(plan->parts[2].layers, 28);
  EXPECT_TRUE(plan->parts[2].output);
}

TEST(PlacementPlan, WhenNothingFitsTheMessageSaysSo) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("HTP0", 16 * kGiB, 64 * kMiB)},
                     .gpu_layers = PlacementRequest::kAllLayers};
  auto plan = PlanPlacement(r);
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message().find("not even the output head fits"), std::string::npos)
      << plan.error().message();
  r.gpu_layers = PlacementRequest::kFitLayers;
  EXPECT_FALSE(PlanPlacement(r).has_value());
}

TEST(PlacementPlan, RejectsImpossibleRequests) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("CUDA0", kGiB)}, .gpu_layers = -1};
  r.tensor_split = {1, 1};
  EXPECT_EQ(PlanPlacement(r).error().code(), StatusCode::kInvalidArgument);
  r.tensor_split = {-1};
  EXPECT_EQ(PlanPlacement(r).error().code(), StatusCode::kInvalidArgument);
  r.tensor_split = {0};
  EXPECT_EQ(PlanPlacement(r).error().code(), StatusCode::kInvalidArgument);
  r.tensor_split = {};
  r.main_device = 3;
  EXPECT_EQ(PlanPlacement(r).error().code(), StatusCode::kInvalidArgument);
  r.main_device = 0;
  r.gpu_layers = -7;
  EXPECT_EQ(PlanPlacement(r).error().code(), StatusCode::kInvalidArgument);
}

TEST(PlacementPlan, DescribeNamesEveryPart) {
  PlacementRequest r{.model = Qwen3("0.6b", 18.0 / 32), .devices = {Device("RPC0", 8 * kGiB)}, .gpu_layers = 10};
  auto plan = PlanPlacement(r);
  ASSERT_TRUE(plan.has_value());
  auto lines = plan->Describe();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("CPU layers 0-18, weights ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("RPC0 layers 19-27 + output, weights ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(", of 8192.0 MiB"), std::string::npos) << lines[1];
}

TEST(ParseByteSize, UnitsAndErrors) {
  EXPECT_EQ(*ParseByteSize("1000"), 1000u);
  EXPECT_EQ(*ParseByteSize("64K"), 64u << 10);
  EXPECT_EQ(*ParseByteSize("512M"), 512u << 20);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512u << 20);
  EXPECT_EQ(*ParseByteSize("3.5G"), 3584ull << 20);
  EXPECT_EQ(*ParseByteSize("2g"), 2ull << 30);
  EXPECT_FALSE(ParseByteSize("").has_value());
  EXPECT_FALSE(ParseByteSize("lots").has_value());
  EXPECT_FALSE(ParseByteSize("-1G").has_value());
  EXPECT_FALSE(ParseByteSize("5Q").has_value());
  EXPECT_FALSE(ParseByteSize("1e30T").has_value());
  EXPECT_FALSE(ParseByteSize("nan").has_value());
}

}  // namespace
}  // namespace llmd::engine
