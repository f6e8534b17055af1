#include "http/metrics_page.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "common/process_memory.h"

namespace llmd::http {
namespace {

void Family(std::string* out, const char* name, const char* type, const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::string Label(const std::string& model) { return "model=\"" + sched::EscapeLabelValue(model) + "\""; }

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A metric with one sample per loaded model: `name{model="…"} value`.
struct ModelSeries {
  const char* name;
  const char* type;
  const char* help;
  std::string (*value)(sched::EngineWorker&);
};

void RenderModelSeries(const ModelSeries& series, sched::ServerState& ctx, std::string* out) {
  Family(out, series.name, series.type, series.help);
  for (const auto& [model, w] : ctx.models()) {
    *out += std::string(series.name) + "{" + Label(model) + "} " + series.value(*w) + "\n";
  }
}

constexpr ModelSeries kWorkingMemoryReleases = {
    "llmd_working_memory_releases_total", "counter",
    "Idle releases of a model's KV cache and scratch (idle_release_after, Ollama keep_alive).",
    [](sched::EngineWorker& w) { return std::to_string(w.stats().working_memory_releases); }};

// The token counters and scheduler gauges, in page order.
constexpr ModelSeries kTokenAndSchedulerSeries[] = {
    {"llmd_prompt_tokens_total", "counter", "Prompt tokens of finished requests, cached ones included.",
     [](sched::EngineWorker& w) { return std::to_string(w.metrics().prompt_tokens.load()); }},
    {"llmd_cached_prompt_tokens_total", "counter", "Prompt tokens reused from the KV cache.",
     [](sched::EngineWorker& w) { return std::to_string(w.metrics().cached_tokens.load()); }},
    {"llmd_generated_tokens_total", "counter", "Generated tokens.",
     [](sched::EngineWorker& w) { return std::to_string(w.metrics().generated_tokens.load()); }},
    {"llmd_draft_tokens_total", "counter", "Speculative decoding: tokens drafted and verified.",
     [](sched::EngineWorker& w) { return std::to_string(w.metrics().draft_tokens.load()); }},
    {"llmd_accepted_draft_tokens_total", "counter",
     "Speculative decoding: drafted tokens the model accepted (each a generated token without a step of "
     "its own).",
     [](sched::EngineWorker& w) { return std::to_string(w.metrics().accepted_draft_tokens.load()); }},
    {"llmd_queue_depth", "gauge", "Requests waiting for a sequence slot.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().queued); }},
    {"llmd_active_sequences", "gauge", "Requests generating now.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().active); }},
    {"llmd_decode_steps_total", "counter", "Decode steps the engine thread ran.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().steps); }},
    {"llmd_sequence_moves_total", "counter",
     "Running requests moved to a free sequence beside the others, so a decode step is one pass over the weights fewer.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().sequence_moves); }},
    {"llmd_prefix_copies_total", "counter", "Prompt prefixes copied from another sequence instead of prefilled.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().prefix_copies); }},
    {"llmd_checkpoints", "gauge", "Recurrent-state checkpoints held (hybrid models).",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().checkpoints); }},
    {"llmd_checkpoint_bytes", "gauge", "Bytes the recurrent-state checkpoints hold.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().checkpoint_bytes); }},
    {"llmd_checkpoint_hits_total", "counter", "Prompts whose prefix was restored from a checkpoint.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().checkpoint_hits); }},
    {"llmd_checkpoint_misses_total", "counter",
     "Prompts sharing a resident prefix that no checkpoint covered (recomputed).",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().checkpoint_misses); }},
    {"llmd_preemptions_total", "counter",
     "Times a running request was paused, its memory kept, or its decode call stopped, so that a higher class could run.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().preemptions); }},
    {"llmd_paused_sequences", "gauge", "Requests sitting out the last step for a higher class or the device.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().paused); }},
    {"llmd_parked_sequences", "gauge", "Paused requests whose memory is parked in host memory for want of room.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().parked); }},
    {"llmd_parked_bytes", "gauge", "Host memory the parked requests' memory takes.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().parked_bytes); }},
    {"llmd_parks_total", "counter", "Times a paused request's memory was parked in host memory to make room.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().parks); }},
    {"llmd_recomputes_total", "counter",
     "Times a paused request's memory was dropped (parking full or impossible) and recomputed from its tokens.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().recomputes); }},
    {"llmd_pinned_prefixes", "gauge", "System prompts pinned: prefilled at load and kept in host memory.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().pinned_prefixes); }},
    {"llmd_pinned_bytes", "gauge", "Host memory the pinned prompts' states take.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().pinned_bytes); }},
    {"llmd_pinned_hits_total", "counter", "Prompts that started from a pinned prompt.",
     [](sched::EngineWorker& w) { return std::to_string(w.stats().pinned_hits); }},
    {"llmd_kv_cache_usage_ratio", "gauge", "Share of the KV cache cells in use (0..1).",
     [](sched::EngineWorker& w) { return Number(w.health().kv_cache_usage); }},
};

// Each model's devices, read once so that the layer and memory families show the same placement.
using ModelPlacements = std::vector<std::pair<std::string, std::vector<engine::DevicePlacement>>>;

std::string DeviceLabel(const std::string& model, const engine::DevicePlacement& d) {
  return Label(model) + ",device=\"" + sched::EscapeLabelValue(d.device) + "\"";
}

void RenderDeviceLayers(const ModelPlacements& placements, std::string* out) {
  Family(out, "llmd_model_device_layers", "gauge",
         "Repeating layers of a model held by each device it uses (the output head counts as one more).");
  for (const auto& [model, devices] : placements) {
    for (const auto& d : devices) {
      if (d.layers == 0 && !d.output) continue;
      *out += "llmd_model_device_layers{" + DeviceLabel(model, d) + "} " + std::to_string(d.layers + (d.output ? 1 : 0)) +
              "\n";
    }
  }
}

void RenderDeviceMemory(const ModelPlacements& placements, std::string* out) {
  Family(out, "llmd_model_device_memory_bytes", "gauge",
         "Memory a model holds on each device: weights, context (KV cache, outputs) and compute scratch.");
  for (const auto& [model, devices] : placements) {
    for (const auto& d : devices) {
      const std::pair<const char*, uint64_t> kinds[] = {
          {"weights", d.model_bytes}, {"context", d.context_bytes}, {"compute", d.compute_bytes}};
      for (const auto& [kind, bytes] : kinds) {
        *out += "llmd_model_device_memory_bytes{" + DeviceLabel(model, d) + ",kind=\"" + kind + "\"} " +
                std::to_string(bytes) + "\n";
      }
    }
  }
}

// Where each model lives: per device, its layers and the memory llama.cpp allocated there.
void RenderPlacement(sched::ServerState& ctx, std::string* out) {
  ModelPlacements placements;
  for (const auto& [model, w] : ctx.models()) placements.emplace_back(model, w->placement());
  RenderDeviceLayers(placements, out);
  RenderDeviceMemory(placements, out);
}

// Memory by kind, reserved (allocated: what the budget counts) and resident (in memory now).
void RenderModelMemory(sched::ServerState& ctx, std::string* out) {
  Family(out, "llmd_memory_bytes", "gauge",
         "A model's memory by kind (weights, kv, compute, checkpoints): reserved (allocated) and resident "
         "(KV pages are committed as tokens use them; an idle release frees kv and compute).");
  for (const auto& [model, w] : ctx.models()) {
    const sched::WorkerStats st = w->stats();
    const std::pair<const char*, engine::MemoryBytes> kinds[] = {
        {"weights", st.memory.weights},
        {"kv", st.memory.kv},
        {"compute", st.memory.compute},
        {"checkpoints", {.reserved = st.checkpoint_bytes, .resident = st.checkpoint_bytes}}};
    for (const auto& [kind, bytes] : kinds) {
      for (const auto& [state, value] : {std::pair{"reserved", bytes.reserved}, std::pair{"resident", bytes.resident}}) {
        *out += "llmd_memory_bytes{" + Label(model) + ",kind=\"" + kind + "\",state=\"" + state + "\"} " +
                std::to_string(value) + "\n";
      }
    }
  }
}

// Models on demand: which models are loaded against the memory budget, and what loaded and
// unloaded them. Per-model samples only for loaded models, so the label set stays bounded.
void RenderModelBudget(sched::ServerState& ctx, std::string* out) {
  const std::vector<sched::AvailableModel> available = ctx.available();
  const sched::ModelLoadStats stats = ctx.model_load_stats();
  size_t loaded = 0;
  for (const auto& m : available) loaded += m.loaded ? 1 : 0;
  Family(out, "llmd_models_available", "gauge", "Models that can be served, loaded or not (config and models directories).");
  *out += "llmd_models_available " + std::to_string(available.size()) + "\n";
  Family(out, "llmd_models_loaded", "gauge", "Models loaded now.");
  *out += "llmd_models_loaded " + std::to_string(loaded) + "\n";
  Family(out, "llmd_model_loaded_bytes", "gauge", "What the memory budget counts for each loaded model.");
  for (const auto& m : available) {
    if (m.loaded) *out += "llmd_model_loaded_bytes{" + Label(m.name) + "} " + std::to_string(m.memory_bytes) + "\n";
  }
  Family(out, "llmd_memory_budget_bytes", "gauge", "The memory budget the loaded models must fit: memory_budget_mb, else the memory available at startup.");
  *out += "llmd_memory_budget_bytes " + std::to_string(stats.budget_bytes) + "\n";
  Family(out, "llmd_memory_budget_used_bytes", "gauge",
         "What the loaded models (and one loading, by its estimate) count against the memory budget.");
  *out += "llmd_memory_budget_used_bytes " + std::to_string(stats.used_bytes) + "\n";
  Family(out, "llmd_model_loads_total", "counter",
         "Model loads by outcome: loaded (at startup and on demand), failed, refused (no room in the budget).");
  for (const auto& [outcome, n] : {std::pair{"loaded", stats.loads}, std::pair{"failed", stats.load_failures},
                                   std::pair{"refused", stats.load_refusals}}) {
    *out += std::string("llmd_model_loads_total{outcome=\"") + outcome + "\"} " + std::to_string(n) + "\n";
  }
  Family(out, "llmd_model_unloads_total", "counter",
         "Models unloaded, by reason: keep_alive ran out, memory_budget (evicted for another), removed from disk.");
  for (int r = 0; r < sched::kModelUnloadKinds; ++r) {
    *out += std::string("llmd_model_unloads_total{reason=\"") + sched::ModelUnloadName(static_cast<sched::ModelUnload>(r)) +
            "\"} " + std::to_string(stats.unloads[r]) + "\n";
  }
}

void RenderProcessMemory(std::string* out) {
  Family(out, "llmd_process_resident_bytes", "gauge",
         "The daemon process's resident memory (/proc/self/status): anonymous, and mapped files.");
  const ProcessMemory process = ReadProcessMemory();
  *out += "llmd_process_resident_bytes{kind=\"anon\"} " + std::to_string(process.resident_anon) + "\n";
  *out += "llmd_process_resident_bytes{kind=\"file\"} " + std::to_string(process.resident_file) + "\n";
}

void RenderLatencyHistograms(sched::ServerState& ctx, std::string* out) {
  Family(out, "llmd_time_to_first_token_seconds", "histogram", "Request submitted to first generated token.");
  for (const auto& [model, w] : ctx.models()) {
    w->metrics().ttft_seconds.Render("llmd_time_to_first_token_seconds", Label(model), out);
  }
  Family(out, "llmd_inter_token_latency_seconds", "histogram", "Time between consecutive tokens of a stream.");
  for (const auto& [model, w] : ctx.models()) {
    w->metrics().inter_token_seconds.Render("llmd_inter_token_latency_seconds", Label(model), out);
  }
}

// Per request class: the requests given a slot, and those waiting for one.
void RenderClassSeries(sched::ServerState& ctx, std::string* out) {
  Family(out, "llmd_class_admitted_requests_total", "counter", "Requests given a sequence slot, by request class.");
  for (const auto& [model, w] : ctx.models()) {
    for (int c = 0; c < kRequestClasses; ++c) {
      *out += "llmd_class_admitted_requests_total{" + Label(model) + ",class=\"" +
              RequestClassName(static_cast<RequestClass>(c)) + "\"} " +
              std::to_string(w->metrics().admitted_by_class[c].load()) + "\n";
    }
  }
  Family(out, "llmd_class_queue_depth", "gauge", "Requests waiting for a sequence slot, by request class.");
  for (const auto& [model, w] : ctx.models()) {
    const sched::WorkerStats st = w->stats();
    for (int c = 0; c < kRequestClasses; ++c) {
      *out += "llmd_class_queue_depth{" + Label(model) + ",class=\"" + RequestClassName(static_cast<RequestClass>(c)) +
              "\"} " + std::to_string(st.queued_by_class[c]) + "\n";
    }
  }
}

// Per peer UID and request class (sched::ClientLedger): at most 18 UID labels ("other" past
// the 16th UID, "unknown" for peers of no known UID), so the series stay bounded.
std::string ClientLabels(const sched::ClientRow& row) {
  return "uid=\"" + sched::EscapeLabelValue(row.uid) + "\",class=\"" + RequestClassName(row.request_class) + "\"";
}

struct ClientCounter {
  const char* name;
  const char* help;
  uint64_t (*value)(const sched::ClientCounters&);
};

constexpr ClientCounter kClientCounters[] = {
    {"llmd_client_requests_total", "Generation requests that reached a model, refused ones included, by peer UID and class.",
     [](const sched::ClientCounters& c) { return c.requests; }},
    {"llmd_client_prompt_tokens_total", "Prompt tokens of a client's requests, cached ones included.",
     [](const sched::ClientCounters& c) { return c.prompt_tokens; }},
    {"llmd_client_cached_prompt_tokens_total", "Prompt tokens of a client's requests reused from the KV cache.",
     [](const sched::ClientCounters& c) { return c.cached_tokens; }},
    {"llmd_client_generated_tokens_total", "Tokens generated for a client.",
     [](const sched::ClientCounters& c) { return c.generated_tokens; }},
    {"llmd_client_preemptions_total", "Times a client's requests were paused (memory kept) for a higher class.",
     [](const sched::ClientCounters& c) { return c.preemptions; }},
};

// A summary without quantiles: `name`_sum (seconds) and `name`_count per client.
void RenderClientSummary(const std::vector<sched::ClientRow>& rows, const char* name, const char* help,
                         double sched::ClientCounters::*sum_ms, uint64_t sched::ClientCounters::*count, std::string* out) {
  Family(out, name, "summary", help);
  for (const sched::ClientRow& row : rows) {
    std::string labels = "{";  // built by appending: GCC 12's -Wrestrict misfires on "{" + s + "} "
    labels += ClientLabels(row);
    labels += "} ";
    *out += std::string(name) + "_sum" + labels + Number(row.counters.*sum_ms / 1000.0) + "\n";
    *out += std::string(name) + "_count" + labels + std::to_string(row.counters.*count) + "\n";
  }
}

void RenderClientSeries(const sched::ClientLedger& ledger, std::string* out) {
  const std::vector<sched::ClientRow> rows = ledger.Snapshot();
  for (const ClientCounter& counter : kClientCounters) {
    Family(out, counter.name, "counter", counter.help);
    for (const sched::ClientRow& row : rows) {
      *out += std::string(counter.name) + "{" + ClientLabels(row) + "} " + std::to_string(counter.value(row.counters)) + "\n";
    }
  }
  Family(out, "llmd_client_refusals_total", "counter",
         "A client's requests refused before they ran: over its token budget, queue full, busy, deadline unmeetable.");
  for (const sched::ClientRow& row : rows) {
    for (int r = 0; r < sched::kRefusalKinds; ++r) {
      *out += "llmd_client_refusals_total{" + ClientLabels(row) + ",reason=\"" +
              sched::RefusalName(static_cast<sched::Refusal>(r)) + "\"} " + std::to_string(row.counters.refusals[r]) + "\n";
    }
  }
  RenderClientSummary(rows, "llmd_client_queue_wait_seconds", "Time a client's requests waited for a slot (cancelled ones not counted).",
                      &sched::ClientCounters::queue_wait_ms_sum, &sched::ClientCounters::queue_waits, out);
  RenderClientSummary(rows, "llmd_client_ttft_seconds", "Time to first token of a client's requests.",
                      &sched::ClientCounters::ttft_ms_sum, &sched::ClientCounters::ttfts, out);
}

}  // namespace

std::string RenderMetricsPage(sched::ServerState& ctx) {
  std::string out;
  Family(&out, "llmd_requests_total", "counter", "Finished API requests by API and outcome.");
  ctx.requests().Render(&out);
  Family(&out, "llmd_ready", "gauge", "1 when the models are loaded and serving.");
  out += std::string("llmd_ready ") + (ctx.ready() ? "1" : "0") + "\n";
  if (!ctx.ready()) return out;

  RenderPlacement(ctx, &out);
  RenderModelMemory(ctx, &out);
  RenderModelBudget(ctx, &out);
  RenderModelSeries(kWorkingMemoryReleases, ctx, &out);
  RenderProcessMemory(&out);
  for (const ModelSeries& series : kTokenAndSchedulerSeries) RenderModelSeries(series, ctx, &out);
  RenderClassSeries(ctx, &out);
  RenderClientSeries(ctx.clients(), &out);
  RenderLatencyHistograms(ctx, &out);
  return out;
}

}  // namespace llmd::http
