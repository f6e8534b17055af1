#include "config/config.h"

#include <filesystem>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include "common/duration.h"
#include "config/config_values.h"
#include "engine/cpu_placement.h"
#include "engine/placement_plan.h"

namespace llmd::config {
namespace {


// One setting: its TOML key, its command-line flags, its environment names (later ones win)
// and how to parse it.
struct Key {
  std::string name;
  std::vector<std::string> flags;
  std::vector<std::string> envs;
  std::string help;
  Setter set;
  bool is_bool = false;
  // Each value adds one item (a TOML array gives one value per element; a flag may repeat),
  // for lists whose items may hold commas.
  bool appends = false;
};

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      {"model_path", {"--model", "-m", "--model-path"}, {"PORTAL_LLM_MODEL_PATH", "LLMD_MODEL_PATH"},
       "GGUF model file (required)",
       [](DaemonConfig& c, const std::string& v) {
         if (v.empty()) return Bad("must not be empty");
         c.engine.model_path = v;
         return Status::Ok();
       }},
      {"model_name", {"--model-name"}, {"LLMD_MODEL_NAME"}, "Name of the model (default: its file name)",
       Str(&DaemonConfig::model_name)},
      {"models", {"--models"}, {"LLMD_MODELS"},
       "More models to load beside the first, as name=path[,name=path...]; requests choose one by name",
       [](DaemonConfig& c, const std::string& v) {
         c.extra_models.clear();
         for (const auto& item : SplitList(v)) {
           size_t eq = item.find('=');
           if (eq == 0 || eq == std::string::npos || eq + 1 == item.size()) return Bad("'" + item + "' is not name=path");
           c.extra_models.emplace_back(item.substr(0, eq), item.substr(eq + 1));
         }
         return Status::Ok();
       }},
      {"embedding_models", {"--embedding-models"}, {"LLMD_EMBEDDING_MODELS"},
       "Models (by name) loaded for /v1/embeddings instead of generation, as name[,name...]; each "
       "file must name its pooling",
       [](DaemonConfig& c, const std::string& v) {
         c.embedding_models = SplitList(v);
         return Status::Ok();
       }},
      {"memory_budget_mb", {"--memory-budget-mb"}, {"LLMD_MEMORY_BUDGET_MB"},
       "Memory the models (weights + KV cache) may take; 0: what is available at startup",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.memory_budget_mb, 0, 1ll << 40); }},
      {"models_dir", {"--models-dir"}, {"LLMD_MODELS_DIR"},
       "Writable models directory: its models (NAME.gguf, NAME.modelfile) load when a request names one; empty: off",
       Str(&DaemonConfig::models_dir)},
      {"system_models_dirs", {"--system-models-dirs"}, {"LLMD_SYSTEM_MODELS_DIRS"},
       "Read-only models directories searched after models_dir, as dir[,dir...]",
       [](DaemonConfig& c, const std::string& v) {
         c.system_models_dirs = SplitList(v);
         return Status::Ok();
       }},
      {"models_keep_alive", {"--models-keep-alive"}, {"LLMD_MODELS_KEEP_ALIVE"},
       "How long a model loaded on demand stays loaded once idle (5m, 1h; 0: unload after each request; -1: never)",
       [](DaemonConfig& c, const std::string& v) -> Status {
         LLMD_ASSIGN_OR_RETURN(int64_t ms, ParseDurationMs(v));
         if (ms > 366LL * 24 * 3600 * 1000) return Bad("must be at most a year (or -1: never)");
         c.models_keep_alive_ms = ms < 0 ? -1 : ms;
         return Status::Ok();
       }},
      {"memory_floor_mb", {"--memory-floor-mb"}, {"LLMD_MEMORY_FLOOR_MB"},
       "Refuse new requests while less memory than this is available (cgroup limit or system); 0: never",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.memory_floor_mb, 0, 1ll << 40); }},
      {"guard_model", {"--guard-model"}, {"LLMD_GUARD_MODEL"},
       "Name of a loaded model that classifies every answer before it is sent (guard cascade)",
       Str(&DaemonConfig::guard_model)},
      {"guard_system", {"--guard-system"}, {"LLMD_GUARD_SYSTEM"}, "The guard's instruction",
       Str(&DaemonConfig::guard_system)},
      {"guard_grammar", {"--guard-grammar"}, {"LLMD_GUARD_GRAMMAR"},
       "GBNF grammar the guard's verdict must follow (default: Safety: Safe|Unsafe|Controversial)",
       Str(&DaemonConfig::guard_grammar)},
      {"socket_path", {"--socket", "--socket-path"}, {"PORTAL_LLM_SOCKET_PATH", "LLMD_SOCKET_PATH"},
       "Unix socket to listen on (default /run/llmd/llm.sock)",
       [](DaemonConfig& c, const std::string& v) {
         if (v.empty() || v.size() > 107) return Bad("must be 1..107 bytes (sun_path)");
         c.socket_path = v;
         return Status::Ok();
       }},
      {"socket_mode", {"--socket-mode"}, {"LLMD_SOCKET_MODE"}, "0600 (owner only) or 0660 (and the socket group)",
       [](DaemonConfig& c, const std::string& v) {
         if (v == "0600" || v == "600") c.socket_mode = 0600;
         else if (v == "0660" || v == "660") c.socket_mode = 0660;
         else return Bad("must be 0600 or 0660");
         return Status::Ok();
       }},
      {"socket_group", {"--socket-group"}, {"LLMD_SOCKET_GROUP"}, "Group that owns the socket (name or gid)",
       Str(&DaemonConfig::socket_group)},
      {"allowed_uids", {"--allow-uid"}, {"LLMD_ALLOWED_UIDS"},
       "Comma-separated UIDs that may connect (default: the daemon's own and root)",
       IdList(&DaemonConfig::allowed_uids)},
      {"allowed_gids", {"--allow-gid"}, {"LLMD_ALLOWED_GIDS"}, "Comma-separated GIDs that may connect",
       IdList(&DaemonConfig::allowed_gids)},
      {"admin_uids", {"--admin-uid"}, {"LLMD_ADMIN_UIDS"},
       "Comma-separated UIDs that may manage models (pull, create, copy, delete); root always may",
       IdList(&DaemonConfig::admin_uids)},
      {"admin_gids", {"--admin-gid"}, {"LLMD_ADMIN_GIDS"},
       "Comma-separated primary GIDs whose peers may manage models",
       IdList(&DaemonConfig::admin_gids)},
      {"hub_url", {"--hub-url"}, {"LLMD_HUB_URL"},
       "Base URL pull resolves hf.co/owner/repo names against (default https://huggingface.co)",
       [](DaemonConfig& c, const std::string& v) {
         if (!v.starts_with("https://") && !v.starts_with("http://")) return Bad("must be an http(s) URL");
         c.hub_url = v;
         while (c.hub_url.ends_with('/')) c.hub_url.pop_back();
         return Status::Ok();
       }},
      {"pull_max_mb", {"--pull-max-mb"}, {"LLMD_PULL_MAX_MB"},
       "The largest model file pull downloads, MiB (default 524288: 512 GiB)",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.pull_max_mb, 1, 1ll << 30); }},
      {"http_socket", {"--http-socket"}, {"LLMD_HTTP_SOCKET"},
       "Unix socket for the HTTP API (default: http.sock beside socket_path; off: none)",
       [](DaemonConfig& c, const std::string& v) {
         if (v.size() > 107) return Bad("must be at most 107 bytes (sun_path)");
         c.http_socket = v;
         return Status::Ok();
       }},
      {"http_listen", {"--http-listen"}, {"LLMD_HTTP_LISTEN"},
       "Also serve HTTP on loopback TCP, HOST:PORT (peers by UID, or api_key_file)", Str(&DaemonConfig::http_listen)},
      {"ollama_listen", {"--ollama-listen"}, {"LLMD_OLLAMA_LISTEN"},
       "Also serve HTTP on a second loopback address where Ollama clients look, e.g. 127.0.0.1:11434 "
       "(the same API and rules as http_listen)",
       Str(&DaemonConfig::ollama_listen)},
      {"api_key_file", {"--api-key-file"}, {"LLMD_API_KEY_FILE"},
       "File holding the API key TCP clients must send as a Bearer token (none: TCP peers need an allowed UID)",
       Str(&DaemonConfig::api_key_file)},
      {"http_allowed_hosts", {"--http-allowed-host"}, {"LLMD_HTTP_ALLOWED_HOSTS"},
       "Comma-separated extra Host names accepted on TCP (loopback names always are)",
       [](DaemonConfig& c, const std::string& v) {
         c.http_allowed_hosts = SplitList(v);
         return Status::Ok();
       }},
      {"http_max_body_bytes", {"--http-max-body-bytes"}, {"LLMD_HTTP_MAX_BODY_BYTES"},
       "Largest HTTP request body; larger gets 413", U32(&DaemonConfig::http_max_body_bytes, 1024, 64u << 20)},
      {"http_max_connections", {"--http-max-connections"}, {"LLMD_HTTP_MAX_CONNECTIONS"},
       "HTTP connections served at once; more get 503", U32(&DaemonConfig::http_max_connections, 1, 4096)},
      {"http_unidentified_connections", {"--http-unidentified-connections"}, {"LLMD_HTTP_UNIDENTIFIED_CONNECTIONS"},
       "Of http_max_connections, those TCP connections may hold before their headers are in, or with no known UID",
       U32(&DaemonConfig::http_unidentified_connections, 1, 4095)},
      {"http_header_timeout_ms", {"--http-header-timeout-ms"}, {"LLMD_HTTP_HEADER_TIMEOUT_MS"},
       "Deadline for a request's headers (a new TCP connection's: from accept)",
       U32(&DaemonConfig::http_header_timeout_ms, 10, 3600000)},
      {"max_connections", {"--max-connections"}, {"LLMD_MAX_CONNECTIONS"},
       "Native connections served at once, per request class (the class request_classes gives the peer)",
       U32(&DaemonConfig::max_connections, 1, 1024)},
      {"admission_wait_ms", {"--admission-wait-ms"}, {"LLMD_ADMISSION_WAIT_MS"},
       "How long a connection over the cap waits for a slot before Busy",
       U32(&DaemonConfig::admission_wait_ms, 0, 60000)},
      {"rate_limit", {"--rate-limit"}, {"LLMD_RATE_LIMIT"}, "Requests per second per peer UID",
       U32(&DaemonConfig::rate_limit, 1, 1000000)},
      {"frame_timeout_ms", {"--frame-timeout-ms"}, {"LLMD_FRAME_TIMEOUT_MS"},
       "Deadline to receive a whole frame once it has started",
       U32(&DaemonConfig::frame_timeout_ms, 10, 3600000)},
      {"idle_timeout_ms", {"--idle-timeout-ms"}, {"LLMD_IDLE_TIMEOUT_MS"},
       "Deadline for the next request on an open connection",
       U32(&DaemonConfig::idle_timeout_ms, 10, 3600000)},
      {"write_timeout_ms", {"--write-timeout-ms"}, {"LLMD_WRITE_TIMEOUT_MS"},
       "Deadline for a peer to take a frame we send",
       U32(&DaemonConfig::write_timeout_ms, 10, 3600000)},
      {"request_timeout_ms", {"--request-timeout-ms"}, {"LLMD_REQUEST_TIMEOUT_MS"},
       "Deadline for a whole generation, its prefill included (default 1 h)", U32(&DaemonConfig::request_timeout_ms, 10, 86400000)},
      {"queue_depth", {"--queue-depth"}, {"LLMD_QUEUE_DEPTH"}, "Requests that may wait for the engine",
       U32(&DaemonConfig::queue_depth, 1, 4096)},
      {"admission_window_ms", {"--admission-window-ms"}, {"LLMD_ADMISSION_WINDOW_MS"},
       "After serving several requests at once, wait up to this long for a new burst to arrive whole "
       "(it ends early once every slot has a request)",
       U32(&DaemonConfig::admission_window_ms, 0, 60000)},
      {"parallel", {"--parallel", "-np"}, {"LLMD_PARALLEL"},
       "Requests decoded together (continuous batching slots), each with its own context",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.sequences, 1, 64); }},
      {"request_classes", {"--request-class"}, {"LLMD_REQUEST_CLASSES"},
       "Comma-separated rules giving peers their class: uid:N=CLASS or gid:N=CLASS, CLASS being "
       "interactive, normal or background, optionally /CEILING (the highest class the peer may ask for; "
       "default: CLASS). Peers no rule names are normal",
       [](DaemonConfig& c, const std::string& v) { return ParseClassRules(v, &c.request_classes); }},
      {"class_token_budgets", {"--class-token-budget"}, {"LLMD_CLASS_TOKEN_BUDGETS"},
       "Comma-separated CLASS=TOKENS: the tokens a minute (uncached prompt plus generated) each peer UID may "
       "use in that class; over it a request is refused with when to retry. A class not named has no budget",
       [](DaemonConfig& c, const std::string& v) { return ParseTokenBudgets(v, &c.class_token_budgets); }},
      {"reserved_sequences", {"--reserved-sequences"}, {"LLMD_RESERVED_SEQUENCES"},
       "KV sequences beyond parallel: one kept for a higher class (which pauses a lower one to run), one for "
       "a peer waiting behind another peer's many requests of its class, and one for the next request past "
       "the parallel ones, whose prompt is computed while they decode",
       U32(&DaemonConfig::reserved_sequences, 0, 16)},
      {"shared_prefill_tokens", {"--shared-prefill-tokens"}, {"LLMD_SHARED_PREFILL_TOKENS"},
       "Prompt tokens lower classes may prefill per step, together, while an interactive request runs or is expected; "
       "also the chunk size of a prompt whose call an arriving request stopped",
       U32(&DaemonConfig::shared_prefill_tokens, 1, 65536)},
      {"background_on_battery", {"--background-on-battery"}, {"LLMD_BACKGROUND_ON_BATTERY"},
       "Background requests on battery: run, throttle or pause", Action(&DaemonConfig::background_on_battery)},
      {"background_when_hot", {"--background-when-hot"}, {"LLMD_BACKGROUND_WHEN_HOT"},
       "Background requests when the device is hot (hot_celsius): run, throttle or pause",
       Action(&DaemonConfig::background_when_hot)},
      {"hot_celsius", {"--hot-celsius"}, {"LLMD_HOT_CELSIUS"},
       "The temperature of the hottest thermal zone from which the device counts as hot",
       U32(&DaemonConfig::hot_celsius, 30, 150)},
      {"sysfs_root", {"--sysfs-root"}, {"LLMD_SYSFS_ROOT"},
       "Where the battery and thermal state are read (default /sys)", Str(&DaemonConfig::sysfs_root)},
      {"max_sessions", {"--max-sessions"}, {"LLMD_MAX_SESSIONS"},
       "Chat sessions kept; the least recently used is dropped beyond this",
       U32(&DaemonConfig::max_sessions, 1, 100000)},
      {"checkpoint_budget_mb", {"--checkpoint-budget-mb"}, {"LLMD_CHECKPOINT_BUDGET_MB"},
       "MiB of saved recurrent states for prefix reuse on hybrid models (Qwen3.5); 0: none",
       U32(&DaemonConfig::checkpoint_budget_mb, 0, 1 << 20)},
      {"parked_budget_mb", {"--parked-budget-mb"}, {"LLMD_PARKED_BUDGET_MB"},
       "MiB of host memory for paused requests' memory parked when a step has no room; past it they are recomputed",
       U32(&DaemonConfig::parked_budget_mb, 0, 1 << 20)},
      {"pinned_prompts", {"--pin-prompt"}, {"LLMD_PINNED_PROMPT"},
       "A system prompt kept prefilled for the daemon's life, even after an idle release (repeatable; @PATH reads a file)",
       [](DaemonConfig& c, const std::string& v) { return AddPinnedPrompt(v, &c.pinned_prompts); }, false, true},
      {"idle_release_after", {"--idle-release-after"}, {"LLMD_IDLE_RELEASE_AFTER"},
       "Idle this long (300, 90s, 5m, 1h), a model frees its KV cache and scratch and keeps its weights; 0: never",
       Duration(&DaemonConfig::idle_release_after_ms)},
      {"idle_exit_after", {"--idle-exit-after"}, {"LLMD_IDLE_EXIT_AFTER"},
       "Under socket activation, exit after this long with no connection (systemd starts llmd again for the "
       "next client); 0: never",
       Duration(&DaemonConfig::idle_exit_after_ms)},
      {"session_dir", {"--session-dir"}, {"LLMD_SESSION_DIR"},
       "Directory for saved chat sessions (empty: saving is off)", Str(&DaemonConfig::session_dir)},
      {"responses_max_stored", {"--responses-max-stored"}, {"LLMD_RESPONSES_MAX_STORED"},
       "Responses API: stored responses kept (store, previous_response_id); the least recently used is dropped "
       "beyond this; 0: storing is off",
       U32(&DaemonConfig::responses_max_stored, 0, 1000000)},
      {"responses_max_mb", {"--responses-max-mb"}, {"LLMD_RESPONSES_MAX_MB"},
       "Responses API: MiB all stored responses may hold; the least recently used is dropped beyond this",
       U32(&DaemonConfig::responses_max_mb, 1, 1 << 20)},
      {"responses_ttl", {"--responses-ttl"}, {"LLMD_RESPONSES_TTL"},
       "Responses API: how long a stored response is kept after it was made (90s, 12h, 168h)",
       [](DaemonConfig& c, const std::string& v) -> Status {
         LLMD_ASSIGN_OR_RETURN(int64_t ms, ParseDurationMs(v));
         if (ms < 1000 || ms > 366LL * 24 * 3600 * 1000) return Bad("must be between 1s and a year");
         c.responses_ttl_ms = ms;
         return Status::Ok();
       }},
      {"max_context_len", {"--context", "-c"}, {"LLMD_MAX_CONTEXT_LEN"},
       "Tokens one request may hold, each sequence with a KV cache of that size; 0 (default): one KV pool the "
       "sequences share, the model's trained context fitted to the memory budget",
       [](DaemonConfig& c, const std::string& v) {
         return ParseInt(v, &c.engine.context_tokens, 0, 1 << 24);
       }},
      {"max_new_tokens", {"--max-new-tokens"}, {"LLMD_MAX_NEW_TOKENS"},
       "Default and largest max_tokens of a request", U32(&DaemonConfig::max_new_tokens, 1, 4096)},
      {"temperature", {"--temperature"}, {"LLMD_TEMPERATURE"}, "Default sampling temperature; 0 is greedy",
       [](DaemonConfig& c, const std::string& v) {
         return ParseFloat(v, &c.sampling.temperature, 0, 2, "[0, 2]");
       }},
      {"top_p", {"--top-p"}, {"LLMD_TOP_P"}, "Default nucleus sampling threshold",
       [](DaemonConfig& c, const std::string& v) { return ParseFloat(v, &c.sampling.top_p, 0, 1, "[0, 1]"); }},
      {"top_k", {"--top-k"}, {"LLMD_TOP_K"}, "Default top-k limit",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.sampling.top_k, 1, 1 << 20); }},
      {"repeat_penalty", {"--repeat-penalty"}, {"LLMD_REPEAT_PENALTY"}, "Default repetition penalty",
       [](DaemonConfig& c, const std::string& v) {
         return ParseFloat(v, &c.sampling.repeat_penalty, 1, 100, "[1, 100]");
       }},
      {"system_prompt", {"--system-prompt"}, {"LLMD_SYSTEM_PROMPT"},
       "System prompt for native requests that set none (not the HTTP APIs)", Str(&DaemonConfig::system_prompt)},
      {"content_safety_check", {"--content-safety-check"}, {"LLMD_CONTENT_SAFETY_CHECK"},
       "Sanitize user input as the reference daemon does",
       [](DaemonConfig& c, const std::string& v) { return ParseBool(v, &c.content_safety_check); }, true},
      {"enable_thinking", {"--enable-thinking"}, {"LLMD_ENABLE_THINKING"},
       "HTTP chat requests that do not say: think first (reasoning_content)",
       [](DaemonConfig& c, const std::string& v) { return ParseBool(v, &c.enable_thinking); }, true},
      {"thinking_models", {"--thinking-models"}, {"LLMD_THINKING_MODELS"},
       "Models (by name) whose HTTP chat requests think unless they say, as name[,name...]",
       [](DaemonConfig& c, const std::string& v) {
         c.thinking_models = SplitList(v);
         return Status::Ok();
       }},
      {"threads", {"--threads", "-t"}, {"LLMD_THREADS"}, "CPU threads (0: one per fast core, see cpu_affinity; all online CPUs when they are alike)",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.threads, 0, 1024); }},
      {"cpu_affinity", {"--cpu-affinity"}, {"LLMD_CPU_AFFINITY"},
       "auto (pin to the fast cores of a big.LITTLE CPU), none, or a CPU list such as 4-7",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "auto" && v != "none") {
           auto list = engine::ParseCpuList(v);
           if (!list.has_value()) return Bad("must be auto, none or a CPU list such as 4-7");
         }
         c.cpu_affinity = v;
         return Status::Ok();
       }},
      {"thread_priority", {"--thread-priority"}, {"LLMD_THREAD_PRIORITY"},
       "Compute thread priority: normal, medium, high or realtime (above normal needs privileges)",
       [](DaemonConfig& c, const std::string& v) {
         const char* names[] = {"normal", "medium", "high", "realtime"};
         for (int i = 0; i < 4; ++i) {
           if (v == names[i]) {
             c.engine.thread_priority = i;
             return Status::Ok();
           }
         }
         return Bad("must be normal, medium, high or realtime");
       }},
      {"batch_tokens", {"--batch-tokens"}, {"LLMD_BATCH_TOKENS"}, "Prompt tokens per decode call",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.batch_tokens, 1, 65536); }},
      {"devices", {"--device"}, {"LLMD_DEVICES"}, "Comma-separated ggml devices (default: CPU)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.devices = SplitList(v);
         return Status::Ok();
       }},
      {"rpc_servers", {"--rpc"}, {"LLMD_RPC_SERVERS"},
       "Comma-separated host:port of ggml-rpc-servers; their devices become RPC0, RPC1, ... (trusted networks only)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.rpc_servers = SplitList(v);
         return Status::Ok();
       }},
      {"gpu_layers", {"--gpu-layers"}, {"LLMD_GPU_LAYERS"},
       "Layers offloaded to the devices: a count, all (-1), or fit (as many as fit)",
       [](DaemonConfig& c, const std::string& v) {
         if (v == "all") c.engine.gpu_layers = -1;
         else if (v == "fit") c.engine.gpu_layers = -2;
         else return ParseInt(v, &c.engine.gpu_layers, -1, 100000);
         return Status::Ok();
       }},
      {"split_mode", {"--split-mode"}, {"LLMD_SPLIT_MODE"}, "layer, row or none: how layers spread over several devices",
       [](DaemonConfig& c, const std::string& v) {
         if (v == "layer") c.engine.split_mode = engine::SplitMode::kLayer;
         else if (v == "row") c.engine.split_mode = engine::SplitMode::kRow;
         else if (v == "none") c.engine.split_mode = engine::SplitMode::kNone;
         else return Bad("must be layer, row or none");
         return Status::Ok();
       }},
      {"tensor_split", {"--tensor-split"}, {"LLMD_TENSOR_SPLIT"},
       "Proportions of the offloaded layers per device, e.g. 3,1 (default: planned from memory)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.tensor_split.clear();
         for (const auto& item : SplitList(v)) {
           float f;
           LLMD_RETURN_IF_ERROR(ParseFloat(item, &f, 0.0f, 1e6f, "0 .. 1e6"));
           c.engine.tensor_split.push_back(f);
         }
         return Status::Ok();
       }},
      {"main_device", {"--main-device"}, {"LLMD_MAIN_DEVICE"},
       "The device that holds everything with split_mode none (default: the first of devices)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.main_device = v;
         return Status::Ok();
       }},
      {"device_memory", {"--device-memory"}, {"LLMD_DEVICE_MEMORY"},
       "Caps on what each device may hold, e.g. HTP0=3.5G,RPC1=512M (default: its free memory)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.device_caps.clear();
         for (const auto& item : SplitList(v)) {
           const size_t eq = item.find('=');
           if (eq == std::string::npos || eq == 0) return Bad("'" + item + "' is not DEVICE=SIZE");
           LLMD_ASSIGN_OR_RETURN(uint64_t bytes, engine::ParseByteSize(item.substr(eq + 1)));
           if (bytes == 0) return Bad("'" + item + "': a cap must be more than 0");
           c.engine.device_caps.push_back({item.substr(0, eq), bytes});
         }
         return Status::Ok();
       }},
      {"use_mmap", {"--mmap"}, {"LLMD_USE_MMAP"}, "Map the model file instead of reading it (default false: reading keeps no second copy of repacked weights)",
       [](DaemonConfig& c, const std::string& v) { return ParseBool(v, &c.engine.use_mmap); }, true},
      {"flash_attention", {"--flash-attention"}, {"LLMD_FLASH_ATTENTION"}, "auto, on or off",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "auto" && v != "on" && v != "off") return Bad("must be auto, on or off");
         c.engine.flash_attention = v;
         return Status::Ok();
       }},
      {"kv_cache_type", {"--kv-cache-type"}, {"LLMD_KV_CACHE_TYPE"}, "f16, q8_0, q4_0, ...",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.kv_cache_type = v;
         return Status::Ok();
       }},
      // Speculative decoding (the default model's; the other models never draft).
      {"speculative", {"--speculative"}, {"LLMD_SPECULATIVE"},
       "Speculative decoding of the default model: off, ngram (guesses from the text so far), draft "
       "(a smaller model, draft_model) or mtp (the model's own multi-token-prediction layer)",
       [](DaemonConfig& c, const std::string& v) -> Status {
         LLMD_ASSIGN_OR_RETURN(c.engine.speculative.mode, engine::ParseSpeculativeMode(v));
         return Status::Ok();
       }},
      {"draft_model", {"--draft-model"}, {"LLMD_DRAFT_MODEL"},
       "speculative = draft: the draft model, a GGUF path or the name of one of models (same vocabulary)",
       [](DaemonConfig& c, const std::string& v) {
         c.engine.speculative.draft_model_path = v;  // a name becomes its path at startup (DraftModelPath)
         return Status::Ok();
       }},
      {"draft_max", {"--draft-max"}, {"LLMD_DRAFT_MAX"}, "Most tokens drafted per sequence and step",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.speculative.draft_max, 1, 32); }},
      {"draft_min", {"--draft-min"}, {"LLMD_DRAFT_MIN"},
       "A draft shorter than this is not verified (at most draft_max)",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.speculative.draft_min, 0, 32); }},
      {"draft_p_min", {"--draft-p-min"}, {"LLMD_DRAFT_P_MIN"},
       "draft, mtp: drafting stops at a token the drafter finds less likely than this",
       [](DaemonConfig& c, const std::string& v) {
         return ParseFloat(v, &c.engine.speculative.draft_p_min, 0, 1, "[0, 1]");
       }},
      {"ngram_kind", {"--ngram-kind"}, {"LLMD_NGRAM_KIND"}, "ngram: simple, map-k, map-k4v or mod (llama.cpp's kinds)",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "simple" && v != "map-k" && v != "map-k4v" && v != "mod") {
           return Bad("must be simple, map-k, map-k4v or mod");
         }
         c.engine.speculative.ngram_kind = v;
         return Status::Ok();
       }},
      {"ngram_size_n", {"--ngram-size-n"}, {"LLMD_NGRAM_SIZE_N"}, "ngram: tokens of the key looked up",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.speculative.ngram_size_n, 1, 1024); }},
      {"ngram_size_m", {"--ngram-size-m"}, {"LLMD_NGRAM_SIZE_M"}, "ngram: most tokens proposed after a match",
       [](DaemonConfig& c, const std::string& v) { return ParseInt(v, &c.engine.speculative.ngram_size_m, 1, 1024); }},
      {"log_level", {"--log-level"}, {"PORTAL_LLM_LOG_LEVEL", "LLMD_LOG_LEVEL"}, "debug, info, warn or error",
       [](DaemonConfig& c, const std::string& v) {
         if (v != "debug" && v != "info" && v != "warn" && v != "error") {
           return Bad("must be debug, info, warn or error");
         }
         c.log_level = v;
         return Status::Ok();
       }},
      {"log_text", {"--log-text"}, {"LLMD_LOG_TEXT"}, "Log prompt and output text (debugging only)",
       [](DaemonConfig& c, const std::string& v) { return ParseBool(v, &c.log_text); }, true},
  };
  return keys;
}

const Key* FindFlag(const std::string& flag) {
  for (const auto& k : Keys()) {
    for (const auto& f : k.flags) {
      if (f == flag) return &k;
    }
  }
  return nullptr;
}

Status Apply(DaemonConfig& c, const Key& key, const std::string& value, const std::string& source) {
  Status s = key.set(c, value);
  if (s.ok()) return s;
  return InvalidArgumentError(key.name + " = " + value + " (from " + source + "): " + s.message());
}

std::string TomlValueText(const toml::node& node) {
  if (auto s = node.value<std::string>()) return *s;
  if (node.is_integer()) return std::to_string(*node.value<int64_t>());
  if (node.is_floating_point()) {
    std::ostringstream os;
    os << *node.value<double>();
    return os.str();
  }
  if (auto b = node.value<bool>()) return *b ? "true" : "false";
  if (const auto* arr = node.as_array()) {
    std::string out;
    for (const auto& item : *arr) out += (out.empty() ? "" : ",") + TomlValueText(item);
    return out;
  }
  return {};
}

Status ApplyToml(DaemonConfig& c, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << path << ":" << e.source().begin.line << ": " << e.description();
    return InvalidArgumentError("config file " + os.str());
  }
  for (const auto& [k, node] : table) {
    std::string name(k.str());
    const Key* key = nullptr;
    for (const auto& candidate : Keys()) {
      if (candidate.name == name) key = &candidate;
    }
    if (key == nullptr) return InvalidArgumentError("config file " + path + ": unknown key '" + name + "'");
    if (const auto* items = node.as_array(); items != nullptr && key->appends) {
      for (const auto& item : *items) LLMD_RETURN_IF_ERROR(Apply(c, *key, TomlValueText(item), path));
      continue;
    }
    LLMD_RETURN_IF_ERROR(Apply(c, *key, TomlValueText(node), path));
  }
  return Status::Ok();
}

// SpeculativeConfig's own ranges, and what it would otherwise take and not use.
Status ValidateSpeculative(const engine::SpeculativeConfig& s) {
  if (!s.draft_model_path.empty() && s.mode != engine::SpeculativeMode::kDraft) {
    return InvalidArgumentError("draft_model is set, but speculative is " +
                                std::string(engine::SpeculativeModeName(s.mode)) +
                                ": set speculative = draft to use it, or remove draft_model");
  }
  if (s.synthetic_acceptance_length != 0 && s.mode == engine::SpeculativeMode::kOff) {
    return InvalidArgumentError("--spec-synth-len needs speculative decoding on (speculative = ngram, draft or mtp)");
  }
  return s.Validate();
}

// The benchmark-only flags: --spec-synth-len L and --benchmark, which must confirm it.
struct BenchmarkFlags {
  std::optional<std::string> synth_len;
  bool confirmed = false;
};

Status ApplyBenchmarkFlags(DaemonConfig& c, const BenchmarkFlags& flags) {
  if (!flags.synth_len) return Status::Ok();
  if (!flags.confirmed) {
    return InvalidArgumentError("--spec-synth-len is for benchmarks only: the text it produces is not the model's; "
                                "add --benchmark to confirm");
  }
  float length = 0;
  if (Status s = ParseFloat(*flags.synth_len, &length, 1, 33, "[1, draft_max + 1]"); !s.ok()) {
    return InvalidArgumentError("--spec-synth-len " + *flags.synth_len + ": " + s.message());
  }
  c.engine.speculative.synthetic_acceptance_length = length;
  return Status::Ok();
}

}  // namespace

std::string HelpText() {
  std::ostringstream os;
  os << "llmd: an on-device LLM daemon. Loads a GGUF model once and serves local programs on a\n"
        "Unix socket (the reference daemon's protocol; see docs/protocol.md).\n\n"
        "usage: llmd --model PATH [options]\n\n"
        "Settings come from, in increasing precedence: defaults, the TOML file given by\n"
        "--config (or LLMD_CONFIG), the command line, then the environment.\n\n"
        "  --config PATH            TOML file with any of the keys below\n"
        "  --list-devices           print the ggml devices this build can use, then exit\n"
        "  -h, --help               this text\n"
        "  --version                the version\n\n"
        "Benchmarks only (command line only, no key or environment variable):\n"
        "  --spec-synth-len L       accept drafts at random so that the mean accepted length is L\n"
        "                           (1 .. draft_max + 1), whatever the model computes: the text is\n"
        "                           NOT the model's; needs speculative on and --benchmark\n"
        "  --benchmark              confirms --spec-synth-len; nothing else\n\n";
  for (const auto& k : Keys()) {
    std::string flags;
    for (const auto& f : k.flags) flags += (flags.empty() ? "" : ", ") + f;
    flags += k.is_bool ? " [BOOL]" : " VALUE";
    os << "  " << flags;
    for (size_t pad = flags.size(); pad < 36; ++pad) os << ' ';
    os << " " << k.help << "\n";
    std::string envs;
    for (auto e = k.envs.rbegin(); e != k.envs.rend(); ++e) envs += (envs.empty() ? "" : " or ") + *e;
    os << std::string(40, ' ') << "key " << k.name << ", env " << envs << "\n";
  }
  return os.str();
}

Status Validate(const DaemonConfig& c) {
  if (c.engine.model_path.empty()) return InvalidArgumentError("model_path is required (--model PATH)");
  if (Status s = c.sampling.Validate(); !s.ok()) return s;
  // TCP connections start in the unidentified pool; the identified peers need the rest.
  if ((!c.http_listen.empty() || !c.ollama_listen.empty()) &&
      c.http_unidentified_connections >= c.http_max_connections) {
    return InvalidArgumentError("http_unidentified_connections (" + std::to_string(c.http_unidentified_connections) +
                                ") must be less than http_max_connections (" +
                                std::to_string(c.http_max_connections) + ") when serving TCP");
  }
  return ValidateSpeculative(c.engine.speculative);
}

Result<std::string> DraftModelPath(const DaemonConfig& c) {
  const std::string& draft = c.engine.speculative.draft_model_path;
  if (c.engine.speculative.mode != engine::SpeculativeMode::kDraft) return std::string();
  // A model's name wins over a file of that name in the working directory: names are chosen,
  // a relative path can match by accident.
  if (draft == DefaultModelName(c)) return c.engine.model_path;
  for (const auto& [name, path] : c.extra_models) {
    if (name == draft) return path;
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(draft, ec)) return draft;
  std::string names = DefaultModelName(c);
  for (const auto& m : c.extra_models) names += ", " + m.first;
  return InvalidArgumentError("draft_model '" + draft + "' is neither a file nor one of the models (" + names + ")");
}

const ModelGenerationDefaults* FindModelDefaults(const DaemonConfig& c, const std::optional<std::string>& name) {
  const std::string model = name.value_or(DefaultModelName(c));
  auto it = c.model_defaults.find(model);
  if (it == c.model_defaults.end() && model.ends_with(":latest")) {
    it = c.model_defaults.find(model.substr(0, model.size() - 7));
  }
  return it != c.model_defaults.end() ? &it->second : nullptr;
}

bool IsEmbeddingModel(const DaemonConfig& c, const std::string& name) {
  return std::find(c.embedding_models.begin(), c.embedding_models.end(), name) != c.embedding_models.end();
}

bool IsModelAdmin(const DaemonConfig& c, std::optional<uint32_t> uid, std::optional<uint32_t> gid) {
  if (!uid) return false;
  if (*uid == 0) return true;
  auto has = [](const std::vector<uint32_t>& ids, uint32_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  return has(c.admin_uids, *uid) || (gid && has(c.admin_gids, *gid));
}

std::string DefaultModelName(const DaemonConfig& c) {
  if (!c.model_name.empty()) return c.model_name;
  std::string name = c.engine.model_path.substr(c.engine.model_path.find_last_of('/') + 1);
  if (name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

std::string HttpSocketPath(const DaemonConfig& c) {
  if (c.http_socket == "off") return "";
  if (!c.http_socket.empty()) return c.http_socket;
  const size_t slash = c.socket_path.find_last_of('/');
  return (slash == std::string::npos ? std::string() : c.socket_path.substr(0, slash + 1)) + "http.sock";
}

Result<ParsedConfig> ParseConfig(const ConfigSources& sources) {
  ParsedConfig parsed;
  // The TOML file comes first in precedence order, so find it before anything else.
  std::string config_file;
  if (auto it = sources.env.find("LLMD_CONFIG"); it != sources.env.end()) config_file = it->second;
  for (size_t i = 0; i < sources.args.size(); ++i) {
    const std::string& a = sources.args[i];
    if (a == "--config" && i + 1 < sources.args.size()) config_file = sources.args[i + 1];
    if (a.starts_with("--config=")) config_file = a.substr(9);
  }
  if (!config_file.empty()) {
    LLMD_RETURN_IF_ERROR(ApplyToml(parsed.config, config_file));
    parsed.config_file = config_file;
  }

  BenchmarkFlags benchmark;
  for (size_t i = 0; i < sources.args.size(); ++i) {
    std::string arg = sources.args[i];
    if (arg == "-h" || arg == "--help") {
      parsed.exit_now = true;
      parsed.output = HelpText();
      return parsed;
    }
    if (arg == "--version") {
      parsed.exit_now = true;
      parsed.output = "llmd " LLMD_VERSION "\n";
      return parsed;
    }
    if (arg == "--list-devices") {
      parsed.list_devices = true;
      continue;
    }
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--config") {
      if (!has_value) ++i;
      continue;
    }
    if (arg == "--benchmark") {
      if (has_value) return InvalidArgumentError("--benchmark takes no value");
      benchmark.confirmed = true;
      continue;
    }
    if (arg == "--spec-synth-len") {
      if (!has_value && i + 1 >= sources.args.size()) return InvalidArgumentError("option '" + arg + "' needs a value");
      benchmark.synth_len = has_value ? value : sources.args[++i];
      continue;
    }
    const Key* key = FindFlag(arg);
    if (key == nullptr) return InvalidArgumentError("unknown option '" + arg + "' (see llmd --help)");
    if (!has_value) {
      const bool more = i + 1 < sources.args.size();
      if (key->is_bool) {
        bool explicit_value = more && (sources.args[i + 1] == "true" || sources.args[i + 1] == "false");
        value = explicit_value ? sources.args[++i] : "true";
      } else if (more) {
        value = sources.args[++i];
      } else {
        return InvalidArgumentError("option '" + arg + "' needs a value");
      }
    }
    LLMD_RETURN_IF_ERROR(Apply(parsed.config, *key, value, "the command line, " + arg));
  }

  for (const auto& key : Keys()) {
    for (const auto& env : key.envs) {
      if (auto it = sources.env.find(env); it != sources.env.end()) {
        LLMD_RETURN_IF_ERROR(Apply(parsed.config, key, it->second, "the environment, " + env));
      }
    }
  }
  LLMD_RETURN_IF_ERROR(ApplyBenchmarkFlags(parsed.config, benchmark));
  if (!parsed.list_devices) LLMD_RETURN_IF_ERROR(Validate(parsed.config));
  return parsed;
}

}  // namespace llmd::config
