#include "daemon/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/connection_handler.h"
#include "daemon/sd_notify.h"
#include "engine/context_size.h"
#include "engine/cpu_placement.h"
#include "engine/llama/llama_engine.h"
#include "engine/placement_plan.h"
#include "format/model_file.h"
#include "sched/warm_up.h"

namespace llmd::daemon {
namespace {

constexpr size_t kMaxWaiting = 64;  // connections over the cap that may wait for a slot
// The handler threads' own ceiling; max_connections (which a reload may change) is the cap.
constexpr size_t kHandlerCeiling = 4096;

std::string Ms(double ms) { return std::to_string(static_cast<long long>(ms)); }

std::string MiB(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The placement plan, then per device what the plan expected and what llama.cpp allocated.
void LogPlacement(const std::string& model, const engine::ModelInfo& info) {
  Log(LogLevel::kInfo, "placement", {{"model", model}, {"why", info.placement_why}});
  for (const auto& line : info.placement_plan) Log(LogLevel::kInfo, "placement_plan", {{"model", model}, {"part", line}});
  for (const auto& d : info.placement) {
    Log(LogLevel::kInfo, "placement_device",
        {{"model", model}, {"device", d.device}, {"layers", std::to_string(d.layers)},
         {"output", d.output ? "yes" : "no"}, {"planned_mib", MiB(d.planned_bytes)},
         {"planned_weights_mib", MiB(d.planned_weight_bytes)},
         {"weights_mib", MiB(d.model_bytes)}, {"context_mib", MiB(d.context_bytes)},
         {"compute_mib", MiB(d.compute_bytes)}});
  }
}

// Loads and warms up an engine: the first decode allocates the compute graph, so do it
// before saying ready rather than on the first client's time.
Result<std::unique_ptr<engine::Engine>> LoadEngine(const config::DaemonConfig& c) {
  auto engine = engine::NewLlamaEngine();
  Log(LogLevel::kInfo, "loading_model", {{"path", c.engine.model_path}});
  // Threads and the CPUs they run on (the fast cores of a big.LITTLE CPU, by default).
  LLMD_ASSIGN_OR_RETURN(engine::CpuPlacement cpu,
                        engine::PlanCpuPlacement("/sys/devices/system/cpu", c.cpu_affinity, c.engine.threads));
  engine::EngineConfig ec = c.engine;
  ec.threads = cpu.threads;
  ec.cpus = cpu.cpus;
  Log(LogLevel::kInfo, "cpu_placement", {{"threads", std::to_string(cpu.threads)}, {"cpus", cpu.CpuListText()},
                                         {"speeds_from", cpu.source}, {"why", cpu.reason}});
  LLMD_RETURN_IF_ERROR(engine->Load(ec));
  return sched::WarmUp(std::move(engine), c.system_prompt);
}

// A manifest's num_ctx is each request's default context, held to the model's. With an
// explicit max_context_len a request asking for more is refused (the context is fixed when
// the model loads), so a manifest that does is refused when the model would load, saying so,
// rather than every request being cut to less than its manifest says.
Status CheckManifestContext(const config::DaemonConfig& c, const std::string& name) {
  const config::ModelGenerationDefaults* defaults = config::FindModelDefaults(c, name);
  if (defaults == nullptr || !defaults->context_tokens) return Status::Ok();
  const int32_t wanted = *defaults->context_tokens;
  if (c.engine.context_tokens == 0 || wanted <= c.engine.context_tokens) return Status::Ok();
  return InvalidArgumentError("its manifest's num_ctx is " + std::to_string(wanted) + ", more than max_context_len (" +
                              std::to_string(c.engine.context_tokens) +
                              " tokens a request); lower num_ctx in the manifest, or raise max_context_len (0: "
                              "automatic, which holds num_ctx to the KV pool)");
}

// Whether `name` is one of the config's models (model_path's, `models`).
bool IsConfiguredModel(const config::DaemonConfig& c, const std::string& name) {
  return name == config::DefaultModelName(c) ||
         std::any_of(c.extra_models.begin(), c.extra_models.end(), [&](const auto& m) { return m.first == name; });
}

// Every model to load, by name: the first (model_path) and then `models`.
Result<std::vector<std::pair<std::string, std::string>>> ModelList(const config::DaemonConfig& c) {
  std::vector<std::pair<std::string, std::string>> list;
  list.emplace_back(config::DefaultModelName(c), c.engine.model_path);
  for (const auto& m : c.extra_models) list.push_back(m);
  for (size_t i = 0; i < list.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (list[i].first == list[j].first) return InvalidArgumentError("two models are named '" + list[i].first + "'");
    }
  }
  return list;
}

// The settings one model loads with: the shared engine settings and its own file. Only the
// default model (the first) decodes speculatively, its draft_model resolved to a file; a draft
// model fits one vocabulary, and the other models serve other purposes (guard, embeddings).
// An embedding model takes one input at a time.
Result<config::DaemonConfig> ModelConfig(const config::DaemonConfig& c, const std::string& name,
                                         const std::string& path, uint64_t kv_budget_bytes) {
  config::DaemonConfig one = c;
  one.engine.model_path = path;
  one.engine.kv_budget_bytes = kv_budget_bytes;
  if (name == config::DefaultModelName(c)) {
    LLMD_ASSIGN_OR_RETURN(one.engine.speculative.draft_model_path, config::DraftModelPath(c));
  } else {
    one.engine.speculative = engine::SpeculativeConfig();
  }
  if (config::IsEmbeddingModel(c, name)) {
    one.engine.embeddings = true;
    one.engine.sequences = 1;
  } else {
    // `parallel` slots run in a step; the reserved ones are for a higher class (StepPolicy).
    one.engine.sequences = std::min<int32_t>(64, c.engine.sequences + static_cast<int32_t>(c.reserved_sequences));
  }
  return one;
}

// What each model's automatic KV pool may take (engine/context_size.h): the budget less the
// files and a margin (llama.cpp's 1 GiB, less on a small budget), shared by the models that
// generate, less the checkpoints each may keep. KV pages are committed as tokens use them,
// but a full pool must still fit beside everything else.
uint64_t KvShareBytes(const config::DaemonConfig& c, uint64_t budget_mib, uint64_t files_mib, size_t models) {
  const uint64_t margin_mib = std::min<uint64_t>(1024, budget_mib / 4);
  const uint64_t spare_mib = budget_mib > files_mib + margin_mib ? budget_mib - files_mib - margin_mib : 0;
  const uint64_t share_mib = spare_mib / std::max<size_t>(1, models);
  const uint64_t checkpoint_mib = c.checkpoint_budget_mb;
  return share_mib > checkpoint_mib ? (share_mib - checkpoint_mib) << 20 : 0;
}

// Benchmarks only: says loudly, at startup and on every reload, that the text is not the model's.
void WarnOfSyntheticAcceptance(const config::DaemonConfig& c) {
  const double length = c.engine.speculative.synthetic_acceptance_length;
  if (length == 0) return;
  char text[32];
  std::snprintf(text, sizeof text, "%g", length);
  Log(LogLevel::kWarn, "synthetic_acceptance",
      {{"warning", "BENCHMARK MODE (--spec-synth-len): drafts are accepted at random, so the text is NOT "
                   "the model's; never serve users like this"},
       {"mean_accepted_length", text}, {"model", config::DefaultModelName(c)}});
}

// MemAvailable from /proc/meminfo, in MiB (0 if unreadable).
uint64_t AvailableMiB() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:") return kb / 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

}  // namespace

void BlockSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

Daemon::Daemon(config::ParsedConfig parsed, config::ConfigSources sources)
    : parsed_(std::move(parsed)), sources_(std::move(sources)), handlers_(kHandlerCeiling) {}

Daemon::~Daemon() {
  if (reload_thread_.joinable()) reload_thread_.join();
}

// Exiting when idle is safe only where something starts llmd again for the next client and
// keeps its connection meanwhile: systemd, holding every socket llmd serves.
static Status CheckIdleExit(const config::DaemonConfig& c) {
  if (c.idle_exit_after_ms <= 0) return Status::Ok();
  if (!transport::UnixListener::PassedBySystemd()) {
    return InvalidArgumentError("idle_exit_after needs socket activation (systemd passing the socket, LISTEN_FDS; "
                                "see packaging/systemd/llmd.socket): without it nothing would start llmd again");
  }
  if (!config::HttpSocketPath(c).empty() || !c.http_listen.empty() || !c.ollama_listen.empty()) {
    return InvalidArgumentError("idle_exit_after: the HTTP API listens on sockets of its own, which would go away "
                                "while llmd is stopped; set http_socket = \"off\" (and no http_listen or "
                                "ollama_listen), or idle_exit_after = 0");
  }
  return Status::Ok();
}

// Models on demand: the directories' models are listed now and loaded when asked for.
Status Daemon::WatchModelDirectories() {
  const config::DaemonConfig& c = parsed_.config;
  if (c.models_dir.empty() && c.system_models_dirs.empty()) return Status::Ok();
  std::vector<models::ModelDirectory> dirs = models::ModelDirectories(c.models_dir, c.system_models_dirs);
  std::vector<std::string> paths;
  paths.reserve(dirs.size());
  for (const auto& d : dirs) paths.push_back(d.path);
  catalog_ = std::make_unique<models::Catalog>(std::move(dirs));
  Rescan();
  if (!c.models_dir.empty()) {
    manager_ = std::make_unique<ModelManager>(c, *catalog_, *registry_, [this] { Rescan(); }, ctx_->stopping_flag());
    ctx_->set_model_admin(manager_.get());
  }
  LLMD_ASSIGN_OR_RETURN(watcher_, models::DirWatcher::Start(paths, [this](const models::DirChanges&) { Rescan(); }));
  return Status::Ok();
}

Status Daemon::Start() {
  const config::DaemonConfig& c = parsed_.config;
  auto started = RealClock::Get().NowMs();
  LLMD_ASSIGN_OR_RETURN(auto models, ModelList(c));
  WarnOfSyntheticAcceptance(c);
  rate_limiter_ = std::make_unique<sched::RateLimiter>(c.rate_limit, RealClock::Get());
  ctx_ = std::make_unique<ServerContext>(std::make_shared<const config::DaemonConfig>(c), *rate_limiter_);
  memory_guard_ = std::make_unique<sched::MemoryGuard>(c.memory_floor_mb << 20);
  device_monitor_ = std::make_unique<sched::DeviceConditionsMonitor>(c.sysfs_root, RealClock::Get());
  policy_ = std::make_unique<transport::AccessPolicy>(c.allowed_uids, c.allowed_gids);

  // The memory budget is checked before loading and after each model; models are never
  // evicted to make room. Each file is inspected first, so a directory, a device or a FIFO
  // is refused as what it is, before any size arithmetic.
  const uint64_t budget_mib = c.memory_budget_mb > 0 ? c.memory_budget_mb : AvailableMiB();
  uint64_t files_mib = 0;
  std::vector<std::string> files;
  files.reserve(models.size() + 1);
  for (const auto& [name, path] : models) files.push_back(path);
  // The draft model's weights are loaded beside the default model's, even when it is also
  // served under its own name.
  LLMD_ASSIGN_OR_RETURN(std::string draft, config::DraftModelPath(c));
  if (!draft.empty()) files.push_back(draft);
  for (const auto& path : files) {
    LLMD_ASSIGN_OR_RETURN(format::ModelFileInfo file, format::InspectModelFile(path));
    files_mib += file.file_bytes >> 20;
  }
  if (budget_mib > 0 && files_mib > budget_mib) {
    return ResourceExhaustedError("the models' files alone take " + std::to_string(files_mib) +
                                  " MiB, over the memory budget of " + std::to_string(budget_mib) + " MiB");
  }
  {
    size_t generating = 0;
    for (const auto& [name, path] : models) generating += config::IsEmbeddingModel(c, name) ? 0 : 1;
    kv_share_bytes_ = KvShareBytes(c, budget_mib, files_mib, generating);
  }
  LLMD_RETURN_IF_ERROR(CheckIdleExit(c));
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    base_config_ = c;
  }
  registry_ = std::make_unique<ModelRegistry>(
      budget_mib << 20, [this](const ModelSource& source) { return LoadModel(source); },
      [this](const ModelSource& source) { return EstimateModel(source); });
  ctx_->set_registry(registry_.get());
  // HTTP first, so /health can say "loading" while the models load.
  LLMD_ASSIGN_OR_RETURN(http_, HttpFrontend::Start(c, *ctx_, *policy_));
  LLMD_RETURN_IF_ERROR(LoadModels(models, budget_mib));
  if (!c.guard_model.empty() && ctx_->WorkerFor(c.guard_model) == nullptr) {
    return InvalidArgumentError("guard_model '" + c.guard_model + "' is not a loaded model (" + ctx_->ModelNames() + ")");
  }
  LLMD_RETURN_IF_ERROR(WatchModelDirectories());
  registry_->Start();
  transport::ListenOptions lo;
  lo.path = c.socket_path;
  lo.mode = c.socket_mode;
  lo.group = c.socket_group;
  LLMD_ASSIGN_OR_RETURN(listener_, transport::UnixListener::Open(lo));
  accept_thread_ = std::thread([this] { AcceptLoop(); });

  ctx_->set_ready();
  double ready_ms = static_cast<double>(RealClock::Get().NowMs() - started);
  Log(LogLevel::kInfo, "ready",
      {{"socket", listener_->path()}, {"systemd_socket", listener_->from_systemd() ? "yes" : "no"},
       {"ready_ms", Ms(ready_ms)}, {"models", ctx_->ModelNames()}, {"budget_mib", std::to_string(budget_mib)},
       {"max_connections", std::to_string(c.max_connections)}});
  Notify("READY=1\nSTATUS=serving " + ctx_->ModelNames() + " on " + listener_->path());
  return Status::Ok();
}

sched::WorkerOptions Daemon::BaseWorkerOptions() const {
  const config::DaemonConfig& c = parsed_.config;
  sched::WorkerOptions options;
  options.queue_depth = c.queue_depth;
  options.admission_window_ms = c.admission_window_ms;
  options.batch_tokens = c.engine.batch_tokens;
  options.max_sessions = c.max_sessions;
  options.memory_guard = memory_guard_.get();
  options.decode_width = static_cast<size_t>(c.engine.sequences);
  options.shared_prefill_tokens = c.shared_prefill_tokens;
  options.interactive_peers = std::ranges::any_of(
      c.request_classes, [](const ClassRule& rule) { return rule.ceiling == RequestClass::kInteractive; });
  const sched::BackgroundPolicy background{c.background_on_battery, c.background_when_hot,
                                           static_cast<double>(c.hot_celsius)};
  options.background_mode = [monitor = device_monitor_.get(), background] {
    return sched::DecideBackground(background, monitor->Current());
  };
  options.checkpoint_budget_bytes = static_cast<uint64_t>(c.checkpoint_budget_mb) << 20;
  options.parked_budget_bytes = static_cast<uint64_t>(c.parked_budget_mb) << 20;
  options.pinned_system_prompts = c.pinned_prompts;
  options.idle_release_after_ms = c.idle_release_after_ms > 0 ? c.idle_release_after_ms : -1;  // 0: never
  if (const int64_t watchdog_ms = WatchdogIntervalMs(); watchdog_ms > 0) {
    // An idle engine thread must show life well within the half-interval Run() checks.
    options.idle_heartbeat = std::chrono::milliseconds(std::clamp<int64_t>(watchdog_ms / 4, 10, 1000));
  }
  return options;
}

Result<LoadedModel> Daemon::LoadModel(const ModelSource& source) {
  // The settings now (a reload may have changed them), with the models found on disk.
  const std::shared_ptr<const config::DaemonConfig> current = ctx_->config();
  const config::DaemonConfig& c = *current;
  const std::string& name = source.name;
  LLMD_ASSIGN_OR_RETURN(config::DaemonConfig one, ModelConfig(c, name, source.path, kv_share_bytes_));
  LLMD_RETURN_IF_ERROR(CheckManifestContext(c, name));
  one.engine.chat_template = source.chat_template;
  // The pre-check before llama.cpp sees a byte (a file changed since the scan included).
  LLMD_RETURN_IF_ERROR(format::InspectModelFile(source.path).error());
  LLMD_ASSIGN_OR_RETURN(auto engine, LoadEngine(one));
  const sched::WorkerOptions options = BaseWorkerOptions();
  const engine::ModelInfo info = engine->model_info();
  const uint64_t checkpoint_bytes = info.memory.state_checkpoints ? options.checkpoint_budget_bytes : 0;
  uint64_t compute_bytes = 0;
  for (const auto& d : info.placement) compute_bytes += d.compute_bytes;
  // Reserved bytes: KV pages are committed only as tokens use them, but a full context
  // must still fit.
  LoadedModel loaded;
  loaded.bytes = info.file_bytes + info.kv_cache_bytes + compute_bytes + checkpoint_bytes;
  Log(LogLevel::kInfo, "model_loaded",
      {{"name", name}, {"model", info.description}, {"load_ms", Ms(info.load_ms)},
       {"context", std::to_string(info.context_tokens)},
       {"kv", info.pool_tokens > 0 ? "one pool shared by the sequences" : "a cache per sequence"},
       {"trained_context", std::to_string(info.trained_context)}, {"parallel", std::to_string(info.sequences)},
       {"kv_cache_mib", std::to_string(info.kv_cache_bytes >> 20)},
       {"memory", info.memory.partial_truncation ? "attention" : "recurrent (checkpoints)"},
       {"template", !source.chat_template.empty() ? "manifest" : info.has_chat_template ? "model" : "chatml"},
       {"speculative", std::string(engine::SpeculativeModeName(info.speculative.mode))},
       {"draft_max", std::to_string(info.speculative.draft_max)}});
  LogPlacement(name, info);
  if (name == c.guard_model) {
    // A grammar that does not parse would fail every request: refuse it now.
    engine::SamplingParams check = engine::SamplingParams::Greedy();
    check.grammar = c.guard_grammar;
    LLMD_RETURN_IF_ERROR(engine->NewSampler(check, {}).error().WithContext("guard_grammar"));
  }
  sched::WorkerOptions model_options = options;  // the guard and embedding models have no chat to pin
  if (name == c.guard_model || config::IsEmbeddingModel(c, name)) model_options.pinned_system_prompts.clear();
  loaded.worker = std::make_shared<sched::EngineWorker>(std::move(engine), model_options);
  // The pinned prompts' states stay in host memory for the worker's life.
  loaded.bytes += loaded.worker->stats().pinned_bytes;
  return loaded;
}

// Bytes a KV cache value of the configured type takes.
static double KvBytesPerValue(const config::DaemonConfig& c) {
  const std::string& kv = c.engine.kv_cache_type;
  return kv == "q8_0" ? 34.0 / 32 : kv == "q4_0" ? 18.0 / 32 : kv == "f32" ? 4.0 : 2.0;
}

static uint32_t SequencesOf(const config::DaemonConfig& c, const ModelSource& source) {
  return source.embedding ? 1u
                          : static_cast<uint32_t>(std::min<int32_t>(
                                64, c.engine.sequences + static_cast<int32_t>(c.reserved_sequences)));
}

engine::EngineConfig Daemon::SizedEngine(const ModelSource& source, const format::GgufSummary& gguf) const {
  const config::DaemonConfig& c = parsed_.config;
  engine::EngineConfig sized = c.engine;
  sized.embeddings = source.embedding;
  sized.sequences = static_cast<int32_t>(SequencesOf(c, source));
  sized.kv_budget_bytes = kv_share_bytes_;
  return engine::ResolveContext(sized, gguf, KvBytesPerValue(c));
}

uint64_t Daemon::EstimateModel(const ModelSource& source) const {
  auto file = format::InspectModelFile(source.path);
  if (!file.has_value()) return 0;  // the load fails on it, with the reason
  const config::DaemonConfig& c = parsed_.config;
  if (file->format != format::ModelFormat::kGguf) return file->file_bytes;
  const double kv_bytes = KvBytesPerValue(c);
  const uint32_t sequences = SequencesOf(c, source);
  const engine::EngineConfig sized = SizedEngine(source, file->gguf);
  const engine::ModelFootprint footprint = engine::ModelFootprint::FromGguf(
      file->gguf, static_cast<uint32_t>(sized.context_tokens), sequences, kv_bytes,
      static_cast<uint32_t>(std::min(c.engine.batch_tokens, 512)), sequences, c.engine.flash_attention != "off", {},
      static_cast<uint32_t>(sized.pool_tokens));
  uint64_t bytes = file->file_bytes + footprint.compute_bytes + footprint.logits_bytes;
  for (uint64_t b : footprint.layer_memory_bytes) bytes += b;
  return bytes;
}

// Loads, warms up and starts a worker for each configured model, within the memory budget.
Status Daemon::LoadModels(const std::vector<std::pair<std::string, std::string>>& models, uint64_t budget_mib) {
  const config::DaemonConfig& c = parsed_.config;
  uint64_t used_mib = 0;
  for (const auto& [key, names] : {std::pair{"embedding_models", &c.embedding_models}, std::pair{"thinking_models", &c.thinking_models}}) {
    for (const auto& name : *names) {
      if (std::none_of(models.begin(), models.end(), [&](const auto& m) { return m.first == name; })) {
        return InvalidArgumentError(std::string(key) + " names '" + name + "', which is not among the models");
      }
    }
  }
  const std::string default_name = config::DefaultModelName(c);
  for (const auto& [name, path] : models) {
    ModelSource source;
    source.name = name;
    source.path = path;
    source.embedding = config::IsEmbeddingModel(c, name);
    source.configured = true;
    source.pinned = name == default_name || name == c.guard_model;
    source.keep_alive_ms = -1;  // configured models stay (unless a request says otherwise)
    LLMD_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(source));
    used_mib += loaded.bytes >> 20;
    if (budget_mib > 0 && used_mib > budget_mib) {
      return ResourceExhaustedError("model '" + name + "' brings the weights, KV caches, compute scratch and checkpoints to " +
                                    std::to_string(used_mib) + " MiB (pinned prompts included), over the memory budget of " +
                                    std::to_string(budget_mib) + " MiB (memory_budget_mb); nothing is evicted at startup");
    }
    registry_->AddConfigured(std::move(source), std::move(loaded));
  }
  Log(LogLevel::kInfo, "memory_planned", {{"memory_mib", std::to_string(used_mib)}, {"budget_mib", std::to_string(budget_mib)}});
  return Status::Ok();
}

// A manifest's SYSTEM and PARAMETER lines as the generation path applies them.
static config::ModelGenerationDefaults GenerationDefaultsOf(const models::ModelDefaults& defaults) {
  const models::ModelParameters& p = defaults.parameters;
  config::ModelGenerationDefaults d;
  d.system = defaults.system;
  d.chat_template = defaults.chat_template;
  d.stop = p.Strings("stop");
  if (auto n = p.Integer("num_ctx")) d.context_tokens = static_cast<int32_t>(*n);  // ranged 1..2^31-1
  if (auto n = p.Integer("num_predict"); n && *n > 0) d.max_tokens = static_cast<uint32_t>(std::min<int64_t>(*n, UINT32_MAX));
  auto number = [&](const char* key, std::optional<float>* out) {
    if (auto v = p.Number(key)) *out = static_cast<float>(*v);
  };
  number("temperature", &d.temperature);
  number("top_p", &d.top_p);
  number("repeat_penalty", &d.repeat_penalty);
  number("presence_penalty", &d.presence_penalty);
  number("frequency_penalty", &d.frequency_penalty);
  if (auto k = p.Integer("top_k")) d.top_k = static_cast<int32_t>(*k);
  if (auto s = p.Integer("seed"); s && *s >= 0) d.seed = static_cast<uint32_t>(*s);
  return d;
}

void Daemon::Rescan() {
  std::lock_guard<std::mutex> rescan_lock(rescan_mu_);
  models::CatalogScan scan = catalog_->Scan();
  for (const Status& s : scan.directory_errors) Log(LogLevel::kWarn, "models_dir_unreadable", {{"error", s.ToString()}});
  std::vector<ModelSource> sources;
  std::vector<std::string> embedding;
  std::map<std::string, config::ModelGenerationDefaults> defaults;
  const int64_t keep_alive_ms = parsed_.config.models_keep_alive_ms;
  std::map<std::string, std::string> unusable;
  for (const models::CatalogEntry& e : scan.entries) {
    if (!e.usable()) {
      // A warning the first time (a manifest llmd refuses must not go unnoticed), not on every
      // rescan after.
      const std::string error = e.error.ToString();
      const auto seen = unusable_.find(e.name);
      const bool told = seen != unusable_.end() && seen->second == error;
      Log(told ? LogLevel::kDebug : LogLevel::kWarn, "model_unusable",
          {{"name", e.name}, {"path", e.source_path}, {"error", error}});
      unusable.emplace(e.name, error);
      continue;
    }
    // The config's model of that name wins it (the registry skips this one): its defaults
    // must not become the configured model's.
    if (IsConfiguredModel(parsed_.config, e.name)) continue;
    ModelSource source;
    source.name = e.name;
    source.path = e.gguf_path;
    source.embedding = e.embedding;
    source.keep_alive_ms = keep_alive_ms;
    source.chat_template = e.defaults.chat_template.value_or("");
    source.context_tokens = SizedEngine(source, e.gguf).context_tokens;
    if (e.embedding) embedding.push_back(e.name);
    if (!e.defaults.parameters.empty() || e.defaults.system || e.defaults.chat_template) {
      defaults[e.name] = GenerationDefaultsOf(e.defaults);
    }
    sources.push_back(std::move(source));
  }
  unusable_ = std::move(unusable);
  Log(LogLevel::kInfo, "models_scanned", {{"usable", std::to_string(sources.size())},
                                          {"listed", std::to_string(scan.entries.size())}});
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    found_embedding_ = std::move(embedding);
    found_defaults_ = std::move(defaults);
  }
  // The settings first: a model found to serve embeddings is one before it can be asked for.
  PublishConfig(base_config_);
  registry_->SetDiscovered(std::move(sources));
}

void Daemon::PublishConfig(const config::DaemonConfig& base) {
  std::lock_guard<std::mutex> lock(config_mu_);
  if (&base != &base_config_) base_config_ = base;
  auto effective = std::make_shared<config::DaemonConfig>(base_config_);
  effective->model_defaults = found_defaults_;
  for (const std::string& name : found_embedding_) {
    if (!config::IsEmbeddingModel(*effective, name)) effective->embedding_models.push_back(name);
  }
  ctx_->set_config(std::move(effective));
}

int Daemon::Run() {
  if (Status s = Start(); !s.ok()) {
    Log(LogLevel::kError, "startup_failed", {{"error", s.ToString()}});
    Notify("STATUS=startup failed: " + s.message());
    if (watcher_) watcher_->Stop();
    if (registry_) registry_->Stop();
    if (ctx_) ctx_->set_stopping();
    if (accept_thread_.joinable()) accept_thread_.join();
    handlers_.JoinAll();
    if (http_) http_->Stop();
    if (registry_) registry_->Clear();
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  const int64_t watchdog_ms = WatchdogIntervalMs();
  while (!ctx_->shutdown_requested() && !idle_exit_) {
    timespec tick{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&set, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      Log(LogLevel::kInfo, "signal", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      break;
    }
    if (sig == SIGHUP) Reload();
    // The watchdog pings only while the engine thread shows progress, so a hung engine
    // (not just a live accept loop) gets the daemon restarted.
    const int64_t now = RealClock::Get().NowMs();
    const sched::ModelList loaded = ctx_->models();
    bool all_alive = std::all_of(loaded.begin(), loaded.end(), [&](const auto& w) {
      return now - w.second->last_progress_ms() < watchdog_ms / 2;
    });
    if (watchdog_ms > 0 && all_alive) {
      Notify("WATCHDOG=1");
    }
  }
  Shutdown();
  return 0;
}

void Daemon::AcceptLoop() {
  LogRateLimiter reject_log(1000);
  const int64_t idle_exit_ms = ctx_->config()->idle_exit_after_ms;
  int64_t busy_ms = RealClock::Get().NowMs();  // the last time a connection was open or pending
  while (!ctx_->stopping()) {
    // A finished handler wakes this loop at once, so a connection waiting for a slot gets
    // it without waiting for the next poll timeout.
    pollfd p[2] = {{listener_->fd(), POLLIN, 0}, {handlers_.done_fd(), POLLIN, 0}};
    int rc = ::poll(p, 2, 100);
    handlers_.Reap();
    ServeWaiting();
    const int64_t now = RealClock::Get().NowMs();
    if (handlers_.active() > 0 || !waiting_.empty() || (rc > 0 && (p[0].revents & POLLIN))) busy_ms = now;
    // Decided here, where connections are accepted: once this loop stops, nothing is
    // accepted, so a client never reaches a stopping daemon; it waits in the socket.
    if (idle_exit_ms > 0 && now - busy_ms >= idle_exit_ms) {
      Log(LogLevel::kInfo, "idle_exit", {{"idle_ms", std::to_string(now - busy_ms)}});
      idle_exit_ = true;
      return;
    }
    if (rc <= 0 || !(p[0].revents & POLLIN)) continue;
    int fd = ::accept4(listener_->fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) ::usleep(50 * 1000);  // let handlers finish
      continue;
    }
    // Authentication happens before a single byte is read.
    auto peer = transport::GetPeerCred(fd);
    if (!peer.has_value() || !policy_->Allows(*peer)) {
      long suppressed = 0;
      if (reject_log.Allow(&suppressed)) {
        Log(LogLevel::kWarn, "peer_rejected",
            {{"uid", peer.has_value() ? std::to_string(peer->uid) : "?"},
             {"pid", peer.has_value() ? std::to_string(peer->pid) : "?"},
             {"suppressed", std::to_string(suppressed)}});
      }
      ::close(fd);
      continue;
    }
    Admit(fd, *peer);
  }
}

void Daemon::Admit(int fd, const transport::PeerCred& peer) {
  auto conn = std::make_unique<transport::FrameConnection>(fd);
  if (StartHandler(conn, peer)) return;
  if (waiting_.size() < kMaxWaiting) {
    waiting_.push_back({std::move(conn), peer, RealClock::Get().NowMs() + ctx_->config()->admission_wait_ms});
    ServeWaiting();
    return;
  }
  RefuseBusy(*conn, "busy: too many connections waiting; retry with backoff");
}

void Daemon::ServeWaiting() {
  const int64_t now = RealClock::Get().NowMs();
  const uint32_t cap = ctx_->config()->max_connections;
  std::deque<Waiting> still;
  for (auto& w : waiting_) {
    // Health probes and Shutdown are answered at once; the rest wait for a slot.
    if (TriageWaiting(*w.conn, w.peer, *ctx_)) continue;
    if (StartHandler(w.conn, w.peer)) continue;
    if (w.deadline_ms <= now) {
      const char* class_name = RequestClassName(ConnectionClass(w.peer));
      RefuseBusy(*w.conn, "busy: all " + std::to_string(cap) + " " + class_name +
                              " connections are in use; retry with backoff");
    } else {
      still.push_back(std::move(w));
    }
  }
  waiting_.swap(still);
}

// Starts a handler for the connection if a slot is free (taking the connection); false
// leaves it with the caller.
bool Daemon::StartHandler(std::unique_ptr<transport::FrameConnection>& conn, const transport::PeerCred& peer) {
  std::atomic<uint32_t>& running = class_handlers_[ClassIndex(ConnectionClass(peer))];
  if (running.load() >= ctx_->config()->max_connections) return false;
  // Shared only because std::function must be copyable; the handler is its one user.
  std::shared_ptr<transport::FrameConnection> owned(std::move(conn));
  ServerContext* ctx = ctx_.get();  // outlives the handlers: Shutdown joins them first
  ++running;
  // Cannot fail: only this thread starts handlers, and 3 x max_connections <= the ceiling.
  (void)handlers_.TryStart([owned, peer, ctx, &running] {
    ServeConnection(*owned, peer, *ctx);
    --running;
  });
  return true;
}

// The class the config gives the peer: its requests may lower it, never raise it, so it is
// the class its connection is counted in.
RequestClass Daemon::ConnectionClass(const transport::PeerCred& peer) const {
  return ResolveClass(ctx_->config()->request_classes, {peer.uid, peer.gid}, std::nullopt);
}

void Daemon::Reload() {
  if (reload_thread_.joinable()) reload_thread_.join();
  Notify("RELOADING=1");
  Log(LogLevel::kInfo, "reloading");
  // Load beside the serving engine; swap only when the new one is ready.
  reload_thread_ = std::thread([this] {
    auto parsed = config::ParseConfig(sources_);
    Status status = parsed.error();
    std::vector<std::pair<sched::WorkerRef, std::unique_ptr<engine::Engine>>> loaded;
    if (status.ok()) {
      auto models = ModelList(parsed->config);
      status = models.error();
      // Load every model first; swap only when all are ready, so a failure changes nothing.
      for (size_t i = 0; status.ok() && i < models->size(); ++i) {
        const std::string& name = (*models)[i].first;
        const std::string& path = (*models)[i].second;
        const std::optional<ModelSource> known = registry_->Find(name);
        if (!known || !known->configured) {
          status = InvalidArgumentError("model '" + name + "' is new; adding or removing models needs a restart");
          break;
        }
        // A configured model unloaded now loads with the new settings when next asked for.
        sched::WorkerRef worker = ctx_->WorkerFor(name);
        if (worker == nullptr) continue;
        auto one = ModelConfig(parsed->config, name, path, kv_share_bytes_);
        if (!one.has_value()) {
          status = one.error();
          break;
        }
        auto engine = LoadEngine(*one);
        if (!engine.has_value()) status = engine.error().WithContext("model '" + name + "'");
        else loaded.emplace_back(std::move(worker), std::move(*engine));
      }
    }
    if (status.ok()) {
      WarnOfSyntheticAcceptance(parsed->config);
      for (auto& [worker, engine] : loaded) worker->SwapEngine(std::move(engine));
      PublishConfig(parsed->config);
    }
    if (status.ok()) {
      Log(LogLevel::kInfo, "reloaded", {{"model", parsed->config.engine.model_path}});
    } else {
      Log(LogLevel::kError, "reload_failed", {{"error", status.ToString()}, {"keeping", "the current model"}});
    }
    Notify("READY=1");
  });
}

void Daemon::Shutdown() {
  Notify("STOPPING=1");
  Log(LogLevel::kInfo, "stopping");
  ctx_->set_stopping();
  if (accept_thread_.joinable()) accept_thread_.join();
  listener_->Close();  // no new connections; the socket node is gone
  if (watcher_) watcher_->Stop();  // no more rescans
  registry_->Stop();  // no more loads; in-flight and queued requests get their final frame
  waiting_.clear();  // closes them
  if (http_) http_->Stop();
  // Each handler sees the stopping flag or its job's final event and returns within its
  // write deadline; all are joined before the workers they use go away.
  handlers_.JoinAll();
  if (reload_thread_.joinable()) reload_thread_.join();
  registry_->Clear();
  Log(LogLevel::kInfo, "stopped");
}

}  // namespace llmd::daemon
