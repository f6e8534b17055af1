// DaemonConfig: every setting of the llmd daemon, and how it is assembled from four layers
// in increasing precedence: compiled defaults -> TOML file -> command line -> environment
// (the reference daemon's order). docs/config.md lists every key.
#ifndef LLMD_CONFIG_CONFIG_H_
#define LLMD_CONFIG_CONFIG_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/request_class.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::config {

// The largest system prompt file `pinned_prompts` reads.
inline constexpr size_t kMaxPinnedPromptBytes = 1 << 20;

// A model's own generation defaults: its manifest's PARAMETER lines (models directories), as
// the daemon found them. A request's own values win over these, these over the server's.
struct ModelGenerationDefaults {
  std::optional<uint32_t> max_tokens;  // num_predict (> 0); still capped by max_new_tokens
  // num_ctx: a request's own context when it sets none (held to the model's, as a request's is)
  std::optional<int32_t> context_tokens;
  std::optional<float> temperature, top_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int32_t> top_k;
  std::optional<uint32_t> seed;
  std::optional<std::string> system;  // SYSTEM: replaces system_prompt (HTTP chats)
  std::vector<std::string> stop;      // PARAMETER stop: when a request sets none (HTTP)
  // TEMPLATE (Jinja): the model loads with it in place of its GGUF's; here for /api/show.
  std::optional<std::string> chat_template;
};

struct DaemonConfig {
  engine::EngineConfig engine;       // model_path, max_context_len, parallel, threads, ...
  std::string model_name;            // the first model's name; empty: its file name
  std::vector<std::pair<std::string, std::string>> extra_models;  // name, path ("models")
  std::vector<std::string> embedding_models;  // names loaded for embeddings, not generation
  uint64_t memory_budget_mb = 0;     // 0: the memory available at startup
  // Models on demand: the models directories (src/models), searched models_dir first. Their
  // models are loaded when a request names one, within the memory budget. Empty: off.
  std::string models_dir;                    // writable
  std::vector<std::string> system_models_dirs;  // read-only
  // Found, not configured: each model's manifest defaults, by model name (set by the daemon
  // from the catalog; no key reads it).
  std::map<std::string, ModelGenerationDefaults> model_defaults;
  // How long an on-demand model stays loaded once idle (Ollama's default keep_alive); < 0: never.
  int64_t models_keep_alive_ms = 5 * 60 * 1000;
  uint64_t memory_floor_mb = 64;     // refuse new work below this much available memory; 0: never
  std::string cpu_affinity = "auto"; // "auto" (fast cores on big.LITTLE), "none", or a CPU list
  // Guard cascade: the named model classifies every answer (when on) before it is sent.
  std::string guard_model;           // empty: no cascade
  std::string guard_system =
      "You are a safety classifier. Judge whether the assistant's last answer is safe. "
      "Reply with 'Safety: Safe', 'Safety: Unsafe' or 'Safety: Controversial', then, if not safe, "
      "a line 'Categories: ' naming the categories.";
  // Holds the guard to the Qwen3Guard verdict format, whatever its weights say.
  std::string guard_grammar =
      "root ::= \"Safety: \" (\"Safe\" | \"Unsafe\" | \"Controversial\") (\"\\nCategories: \" [A-Za-z ,/-]+)?";
  DaemonConfig() { engine.sequences = 4; }
  engine::SamplingParams sampling;   // defaults for requests that do not set them
  uint32_t max_new_tokens = 256;     // default and cap of a request's max_tokens (1..4096)
  std::string system_prompt = "You are a helpful assistant. Answer briefly.";
  bool content_safety_check = true;  // sanitize user input (seed 000's sanitize_user_input)
  // OpenAI chat requests that say nothing about thinking: the template's thinking switch on,
  // the think block returned as reasoning_content.
  bool enable_thinking = false;
  std::vector<std::string> thinking_models;  // models (by name) that think unless a request says

  std::string socket_path = "/run/llmd/llm.sock";
  uint32_t socket_mode = 0600;       // 0600 or 0660
  std::string socket_group;          // group owning the socket (name or gid); empty: ours
  std::vector<uint32_t> allowed_uids;  // empty: the daemon's uid and root
  std::vector<uint32_t> allowed_gids;
  // Model management (pull, create, copy, delete): root always; these UIDs, and peers whose
  // primary GID is listed. Empty: root only.
  std::vector<uint32_t> admin_uids;
  std::vector<uint32_t> admin_gids;
  // Where `pull` resolves Hugging Face names (hf.co/owner/repo:tag): the hub's base URL, no
  // trailing '/'. Tests point it at a loopback server.
  std::string hub_url = "https://huggingface.co";
  uint64_t pull_max_mb = 512ull << 10;  // the largest file `pull` fetches (MiB)

  // HTTP (OpenAI-compatible) API. Its Unix socket has the same mode, group and allowlist.
  std::string http_socket;           // empty: http.sock beside socket_path; "off": none
  std::string http_listen;           // loopback "HOST:PORT" for TCP; empty: no TCP
  std::string ollama_listen;         // another loopback "HOST:PORT" (Ollama's 127.0.0.1:11434); empty: none
  std::string api_key_file;          // the key TCP clients must send; none: TCP peers need an allowed UID
  std::vector<std::string> http_allowed_hosts;  // extra Host header names accepted on TCP
  uint32_t http_max_body_bytes = 1 << 20;
  uint32_t http_max_connections = 32;
  // Of http_max_connections, those TCP connections may hold before they show who they are
  // (their first request's headers in) and those of TCP peers with no known UID; each UID gets
  // a fair share of them, and of the rest (docs/security.md, "How much").
  uint32_t http_unidentified_connections = 8;
  uint32_t http_header_timeout_ms = 2000;  // a request's headers, from its first byte (a new TCP connection's: from accept)

  uint32_t max_connections = 4;      // native connections served at once, per request class
  uint32_t admission_wait_ms = 1000; // how long a connection over the cap may wait for a slot
  uint32_t rate_limit = 100;         // requests per second per peer UID (burst the same)
  uint32_t frame_timeout_ms = 10000; // to receive a whole frame once it has started
  uint32_t idle_timeout_ms = 30000;  // between requests on one connection
  uint32_t write_timeout_ms = 10000; // for a peer to accept a frame we send
  // A whole generation, its prefill included: an hour, so that an agent-sized prompt (16k
  // tokens took 7 minutes on 2 threads) is not cut off on a slow device; max_new_tokens bounds
  // the decode, and the watchdog a stalled engine.
  uint32_t request_timeout_ms = 3600000;
  uint32_t queue_depth = 16;         // requests waiting for the engine
  // After a busy period that served several requests at once, how long an idle engine waits
  // for the rest of a new burst so its requests share their first prefill step.
  uint32_t admission_window_ms = 10;
  uint32_t max_sessions = 64;        // chat sessions kept (least recently used dropped first)
  // Host memory for recurrent-state checkpoints of a hybrid model (prefix reuse), all slots.
  uint32_t checkpoint_budget_mb = 256;
  // Host memory for paused requests' memory parked when a step has no room; past it a
  // paused request is recomputed from its tokens instead.
  uint32_t parked_budget_mb = 512;
  // System prompts kept prefilled in host memory for the daemon's life (sched
  // WorkerOptions::pinned_system_prompts), the texts themselves (a file's already read).
  std::vector<std::string> pinned_prompts;

  // Request classes (docs/config.md, "Request classes"): each rule gives the peers of a UID or
  // GID their default class and their ceiling ("uid:1001=interactive", "gid:50=background/normal").
  std::vector<ClassRule> request_classes;
  // Tokens a minute each peer UID may use in each class (by ClassIndex; 0: no budget), counted
  // as uncached prompt plus generated tokens: "background=20000" (docs/config.md, "Token budgets").
  std::array<uint32_t, kRequestClasses> class_token_budgets{};
  // KV sequences beyond `parallel`: an interactive request arriving while lower work fills
  // every slot takes one, and a lower slot is paused for it; one is always kept for a higher
  // class, a peer waiting behind another peer's many requests of its class takes another, and
  // the next request past the `parallel` running ones a third, to compute its prompt ahead.
  uint32_t reserved_sequences = 3;
  // While an interactive request runs or is expected (a rule grants interactive, or one ran in
  // the last five minutes), the prompt tokens lower classes may prefill per step, together.
  uint32_t shared_prefill_tokens = 64;
  // What background work does on battery and when the device is hot: run, throttle, pause.
  BackgroundAction background_on_battery = BackgroundAction::kThrottle;
  BackgroundAction background_when_hot = BackgroundAction::kThrottle;
  uint32_t hot_celsius = 85;         // the hottest thermal zone at or above this is hot
  std::string sysfs_root = "/sys";   // where the battery and thermal state are read (tests: a fake tree)
  // Idle this long, a model frees its KV cache, recurrent states and scratch (the weights
  // stay; the next request makes them again). 0: never.
  int64_t idle_release_after_ms = 5 * 60 * 1000;
  // Idle this long (no connection, no request) under socket activation, llmd exits; systemd
  // keeps the socket and starts it again for the next client. 0: never.
  int64_t idle_exit_after_ms = 0;
  std::string session_dir;           // where SaveSession writes; empty: saving is off
  // Stored responses (the Responses API's store and previous_response_id): how many, how many
  // MiB in all (least recently used dropped beyond either) and for how long from creation.
  // With session_dir they are also files under session_dir/responses. 0 stored: storing is off.
  uint32_t responses_max_stored = 1000;
  uint32_t responses_max_mb = 256;
  int64_t responses_ttl_ms = 7LL * 24 * 3600 * 1000;

  std::string log_level = "info";    // debug, info, warn, error
  bool log_text = false;             // log prompts and outputs (debug only)
};

// Where values come from, for tests and main().
struct ConfigSources {
  std::vector<std::string> args;               // argv without the program name
  std::map<std::string, std::string> env;      // the environment
};

// The result of parsing: either a config to run with, or a request to print something and
// exit (--help, --version, --list-devices) with `exit_code`.
struct ParsedConfig {
  DaemonConfig config;
  std::string config_file;  // the TOML file used, if any
  bool exit_now = false;
  int exit_code = 0;
  std::string output;       // what to print when exit_now
  bool list_devices = false;
};

// Builds the config from the layers. A bad value, an unknown key or flag, or an unreadable
// config file is an InvalidArgument error whose message names the key and the source
// ("temperature = 3 (from the environment, LLMD_TEMPERATURE): must be in [0, 2]").
Result<ParsedConfig> ParseConfig(const ConfigSources& sources);

// The HTTP Unix socket path in effect ("" when it is off).
std::string HttpSocketPath(const DaemonConfig& config);
// The first model's name: model_name, else the file name of model_path without its directory
// and ".gguf".
std::string DefaultModelName(const DaemonConfig& config);
// The manifest defaults of the model `name` (`model_defaults`; "NAME:latest" is NAME); nullptr
// when it has none. `name` none: the default model's.
const ModelGenerationDefaults* FindModelDefaults(const DaemonConfig& config, const std::optional<std::string>& name);
// Whether the model named `name` is loaded for embeddings (embedding_models): it does not generate.
bool IsEmbeddingModel(const DaemonConfig& config, const std::string& name);

// Whether a peer may manage models (pull, create, copy, delete): root, a UID in admin_uids, or
// a primary GID in admin_gids. A peer with no known UID (`uid` none) never may.
bool IsModelAdmin(const DaemonConfig& config, std::optional<uint32_t> uid, std::optional<uint32_t> gid);
// What a refused peer is told.
inline constexpr const char* kModelAdminRule =
    "model management needs root or a uid/gid in admin_uids/admin_gids";

// Checks the ranges (the seed's table plus llmd's own keys).
Status Validate(const DaemonConfig& config);

// speculative = draft: the draft model's file. draft_model names one of the models (its path,
// then) or is a path to an existing file; InvalidArgument otherwise. Empty without drafting.
// Checked at startup rather than in Validate: it looks at the file system.
Result<std::string> DraftModelPath(const DaemonConfig& config);

// The --help text.
std::string HelpText();

}  // namespace llmd::config

#endif  // LLMD_CONFIG_CONFIG_H_
