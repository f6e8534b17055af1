// llmctl: talk to a running llmd from the terminal or a script.
#include <cstdio>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "llmd/client.h"
#include "tools/llmctl/stats_text.h"
#include "tools/llmctl/terminal_text.h"

namespace {

using llmd::ClientError;

// Model text goes out as generated, except to a terminal, where control characters and
// escape sequences are shown, not obeyed (unless --raw).
bool g_escape_controls = false;

void Show(std::string_view text) {
  const std::string safe = g_escape_controls ? llmd::llmctl::TerminalSafe(text) : std::string(text);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
  std::fflush(stdout);
}

// Exit codes scripts can rely on.
enum Exit { kOk = 0, kServerError = 1, kUsage = 2, kConnectionFailed = 3, kTimeout = 4, kIoError = 5 };

int Report(const ClientError& e, const std::string& socket, bool json) {
  if (json) {
    nlohmann::json j = {{"error", e.ToString()}, {"server_code", e.server_code}};
    std::printf("%s\n", j.dump().c_str());
  }
  switch (e.kind) {
    case ClientError::Kind::kConnectionFailed:
      std::fprintf(stderr, "llmctl: cannot reach llmd at %s: %s\n  (is llmd running? use --socket PATH or LLMD_SOCKET_PATH)\n",
                   socket.c_str(), e.message.c_str());
      return kConnectionFailed;
    case ClientError::Kind::kTimeout:
      std::fprintf(stderr, "llmctl: llmd did not answer in time: %s\n", e.message.c_str());
      return kTimeout;
    case ClientError::Kind::kServerError:
      std::fprintf(stderr, "llmctl: llmd refused: %s\n", e.ToString().c_str());
      return kServerError;
    case ClientError::Kind::kIoError:
      std::fprintf(stderr, "llmctl: %s\n", e.ToString().c_str());
      return kIoError;
  }
  return kIoError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"llmctl: talk to a running llmd daemon."};
  app.require_subcommand(1);
  const char* env_socket = std::getenv("LLMD_SOCKET_PATH");
  std::string socket = env_socket != nullptr ? env_socket : "/run/llmd/llm.sock";
  int timeout_ms = 10000;
  bool json = false;
  app.add_option("-s,--socket", socket, "llmd's socket (env LLMD_SOCKET_PATH)")->capture_default_str();
  app.add_option("--timeout-ms", timeout_ms, "Give up when llmd sends nothing for this long")
      ->check(CLI::Range(1, 3600000))->capture_default_str();
  app.add_flag("--json", json, "Print one JSON object instead of text");
  bool raw = false;
  app.add_flag("--raw", raw, "Write model text to a terminal as is (default: control characters are shown escaped)");

  auto* gen = app.add_subcommand("generate", "Generate a reply, streamed to the terminal");
  std::string prompt;
  llmd::GenerateOptions options;
  uint32_t max_tokens = 0, top_k = 0, seed = 0, draft_max = 0;
  float temperature = -1, top_p = -1;
  std::string system;
  gen->add_option("prompt", prompt, "The message")->required();
  gen->add_option("-n,--max-tokens", max_tokens, "Tokens to generate (default: llmd's)");
  gen->add_option("--system", system, "System prompt (default: llmd's)");
  gen->add_option("--temperature", temperature, "0 is greedy (0..2)");
  gen->add_option("--top-p", top_p, "Nucleus sampling (0..1)");
  gen->add_option("--top-k", top_k, "Top-k sampling (> 0)");
  gen->add_option("--seed", seed, "Sampling seed");
  gen->add_option("--draft-max", draft_max, "Most tokens drafted per step (0: no speculative decoding; default: llmd's)");
  auto* chat = app.add_subcommand(
      "chat", "Chat interactively: /save keeps the session on the daemon's disk, /reset starts over, /quit or EOF ends");
  std::string session, chat_system;
  bool restore = false;
  chat->add_option("--session", session, "Session id (default: a new one)");
  chat->add_flag("--restore", restore, "Continue the session saved under --session");
  chat->add_option("--system", chat_system, "System prompt of a new session");
  std::string overflow = "error";
  chat->add_option("--overflow", overflow,
                   "When the conversation outgrows the model's context: error (refuse the turn) or drop_oldest "
                   "(drop the oldest whole turns, keeping the system prompt and this one)")
      ->check(CLI::IsMember({"error", "drop_oldest"}))
      ->capture_default_str();
  auto* stats = app.add_subcommand(
      "stats", "Show llmd's counters: TTFT p50/p95, tok/s, cache reuse, memory, speculative decoding");
  bool by_client = false;
  stats->add_flag("--by-client", by_client,
                  "One line per peer UID and request class: requests, refusals, mean queue wait and TTFT, tokens, "
                  "preemptions");
  auto* models = app.add_subcommand("models", "List the models llmd can serve, loaded or not (as ls)");
  auto* ls = app.add_subcommand("ls", "List the models llmd can serve, loaded or not");
  auto* ps = app.add_subcommand("ps", "List the models loaded now");
  // Model management: root and llmd's admin_uids/admin_gids only.
  auto* pull = app.add_subcommand(
      "pull", "Download a GGUF into models_dir (admins): an https URL, or hf.co/owner/repo[:QUANT or file]; "
              "a progress bar on a terminal, plain lines when piped");
  std::string pull_source;
  pull->add_option("source", pull_source, "https://.../model.gguf or hf.co/owner/repo:Q4_K_M")->required();
  auto* cp = app.add_subcommand("cp", "Copy a model under a new name in models_dir (admins)");
  std::string cp_source, cp_destination;
  cp->add_option("source", cp_source, "The model to copy")->required();
  cp->add_option("destination", cp_destination, "Its new name")->required();
  auto* rm = app.add_subcommand("rm", "Delete a model from models_dir (admins; refused while it serves)");
  std::string rm_model;
  rm->add_option("model", rm_model, "The model to delete")->required();
  auto* health = app.add_subcommand("health", "Show whether llmd has its model loaded");
  auto* shutdown = app.add_subcommand("shutdown", "Stop llmd (root only)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kOk : kUsage;
  }

  g_escape_controls = !raw && ::isatty(1);
  llmd::LlmClient client(socket, std::chrono::milliseconds(timeout_ms));
  if (*gen) {
    if (gen->count("--max-tokens")) options.max_tokens = max_tokens;
    if (gen->count("--system")) options.system = system;
    if (gen->count("--temperature")) options.temperature = temperature;
    if (gen->count("--top-p")) options.top_p = top_p;
    if (gen->count("--top-k")) options.top_k = top_k;
    if (gen->count("--seed")) options.seed = seed;
    if (gen->count("--draft-max")) options.draft_max = draft_max;
    auto r = client.GenerateStream(prompt, options, [&](std::string_view text) {
      if (!json) Show(text);
      return true;
    });
    if (!r.has_value()) {
      if (!json) std::printf("\n");
      return Report(r.error(), socket, json);
    }
    if (json) {
      nlohmann::json j = {{"text", r->text},
                          {"tokens_generated", r->tokens_generated},
                          {"prompt_tokens", r->prompt_tokens},
                          {"cached_tokens", r->cached_tokens},
                          {"prefill_ms", r->prefill_ms},
                          {"ttft_ms", r->ttft_ms},
                          {"decode_ms", r->decode_ms},
                          {"draft_tokens", r->draft_tokens},
                          {"accepted_draft_tokens", r->accepted_draft_tokens},
                          {"finish_reason", r->finish_reason}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      double tps = r->tokens_generated > 1 && r->decode_ms > 0 ? (r->tokens_generated - 1) * 1000.0 / r->decode_ms : 0;
      std::printf("\n");
      const std::string drafts =
          r->draft_tokens > 0 ? ", " + llmd::llmctl::DraftLine(r->draft_tokens, r->accepted_draft_tokens) : "";
      std::fprintf(stderr, "[%u prompt tokens (%u cached), ttft %.0f ms, %u tokens at %.1f tok/s%s, %s]\n",
                   r->prompt_tokens, r->cached_tokens, r->ttft_ms, r->tokens_generated, tps, drafts.c_str(),
                   r->finish_reason.c_str());
    }
    return kOk;
  }
  if (*chat) {
    if (session.empty()) session = "llmctl-" + std::to_string(::getpid()) + "-" + std::to_string(std::time(nullptr));
    llmd::GenerateOptions co;
    if (chat->count("--system")) co.system = chat_system;
    // Sent only when given, so a daemon that predates the field reads the same request bytes.
    if (chat->count("--overflow")) {
      co.overflow = overflow == "drop_oldest" ? llmd::Overflow::kDropOldest : llmd::Overflow::kError;
    }
    const bool tty = ::isatty(0);
    if (restore) {
      if (auto e = client.RestoreSession(session)) return Report(*e, socket, json);
      std::printf("(restored session %s)\n", session.c_str());
    }
    std::string line;
    while (true) {
      if (tty) std::fputs("> ", stdout), std::fflush(stdout);
      if (!std::getline(std::cin, line) || line == "/quit") break;
      if (line.empty()) continue;
      if (line == "/save") {
        if (auto e = client.SaveSession(session)) return Report(*e, socket, json);
        std::printf("(saved as %s; continue later with: llmctl chat --session %s --restore)\n", session.c_str(),
                    session.c_str());
        continue;
      }
      if (line == "/reset") {
        if (auto e = client.EndSession(session); e && e->kind != ClientError::Kind::kServerError) {
          return Report(*e, socket, json);
        }
        std::printf("(new conversation)\n");
        continue;
      }
      auto r = client.Chat(session, line, co, [&](std::string_view text) {
        Show(text);
        return true;
      });
      std::printf("\n");
      if (!r.has_value()) return Report(r.error(), socket, json);
      const std::string dropped = r->dropped_turns > 0 ? ", " + llmd::llmctl::DroppedLine(r->dropped_turns,
                                                                                          r->dropped_tokens)
                                                       : "";
      std::fprintf(stderr, "[%u prompt tokens (%u cached), ttft %.0f ms, %u tokens%s]\n", r->prompt_tokens,
                   r->cached_tokens, r->ttft_ms, r->tokens_generated, dropped.c_str());
    }
    return kOk;
  }
  if (*stats) {
    auto r = client.Stats();
    if (!r.has_value()) return Report(r.error(), socket, json);
    if (json) {
      nlohmann::json j = {{"requests", r->requests},
                          {"generated_tokens", r->generated_tokens},
                          {"ttft_p50_ms", r->ttft_p50_ms},
                          {"ttft_p95_ms", r->ttft_p95_ms},
                          {"prefill_tokens_per_second", r->prefill_tokens_per_second},
                          {"decode_tokens_per_second", r->decode_tokens_per_second},
                          {"cached_token_ratio", r->cached_token_ratio},
                          {"active", r->active},
                          {"queued", r->queued},
                          {"sessions", r->sessions},
                          {"draft_tokens", r->draft_tokens},
                          {"accepted_draft_tokens", r->accepted_draft_tokens}};
      // null when nothing was drafted: 0/0 is no rate.
      const auto rate = llmd::llmctl::DraftAcceptanceRate(r->draft_tokens, r->accepted_draft_tokens);
      j["draft_acceptance_rate"] = rate ? nlohmann::json(*rate) : nlohmann::json(nullptr);
      j["clients"] = nlohmann::json::array();
      for (const auto& c : r->clients) {
        j["clients"].push_back({{"uid", c.uid}, {"class", c.request_class}, {"requests", c.requests},
                                {"refused", {{"budget", c.refused_budget}, {"queue_full", c.refused_queue_full},
                                             {"busy", c.refused_busy}, {"deadline", c.refused_deadline}}},
                                {"queue_wait_ms", c.queue_wait_ms}, {"ttft_ms", c.ttft_ms},
                                {"prompt_tokens", c.prompt_tokens}, {"cached_tokens", c.cached_tokens},
                                {"generated_tokens", c.generated_tokens}, {"preemptions", c.preemptions}});
      }
      if (r->memory) {
        const auto& m = *r->memory;
        j["memory_mib"] = {{"weights_resident", m.weights_resident_mib}, {"kv_reserved", m.kv_reserved_mib},
                           {"kv_resident", m.kv_resident_mib},           {"compute", m.compute_mib},
                           {"checkpoints", m.checkpoints_mib},           {"process_resident", m.process_resident_mib}};
        j["working_memory_releases"] = m.working_memory_releases;
      }
      std::printf("%s\n", j.dump().c_str());
    } else if (by_client) {
      std::fputs(llmd::llmctl::ClientTable(r->clients).c_str(), stdout);
    } else {
      std::printf("requests: %u (%u generated tokens)\nttft: p50 %.0f ms, p95 %.0f ms\n"
                  "prefill: %.1f tok/s\ndecode: %.1f tok/s\ncached prompt tokens: %.0f%%\n"
                  "now: %u active, %u queued, %u chat sessions\n",
                  r->requests, r->generated_tokens, r->ttft_p50_ms, r->ttft_p95_ms, r->prefill_tokens_per_second,
                  r->decode_tokens_per_second, r->cached_token_ratio * 100, r->active, r->queued, r->sessions);
      if (r->memory) {
        const auto& m = *r->memory;
        std::printf("memory: weights %u MiB, KV %u of %u MiB resident, compute %u MiB, checkpoints %u MiB; "
                    "process %u MiB resident; %u idle release(s)\n",
                    m.weights_resident_mib, m.kv_resident_mib, m.kv_reserved_mib, m.compute_mib, m.checkpoints_mib,
                    m.process_resident_mib, m.working_memory_releases);
      }
      std::printf("%s\n", llmd::llmctl::DraftLine(r->draft_tokens, r->accepted_draft_tokens).c_str());
    }
    return kOk;
  }
  if (*pull) {
    // A pull sends a frame every 200 ms or so while bytes flow; a slow hub may take longer
    // to answer its listing, so the per-frame wait is at least a minute.
    llmd::LlmClient puller(socket, std::chrono::milliseconds(std::max(timeout_ms, 60000)));
    const bool tty = ::isatty(1) && !json;
    std::string last_status, model;
    int last_decile = -1;
    uint64_t first_done = 0;
    auto started = std::chrono::steady_clock::now();
    bool drawn = false;
    auto e = puller.PullModel(pull_source, [&](const llmd::LlmClient::PullProgress& p) {
      if (p.status.starts_with("success: model ")) {
        model = p.status.substr(15);
        return true;
      }
      if (p.status != last_status) {  // a new phase: the rate starts over
        if (tty && drawn) std::printf("\n");
        started = std::chrono::steady_clock::now();
        first_done = p.completed;
        last_decile = -1;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double rate = seconds > 0.5 ? static_cast<double>(p.completed - first_done) / seconds : 0;
      const std::string safe_status = llmd::llmctl::TerminalSafe(p.status);
      if (tty) {
        std::printf("\r%s\x1b[K", llmd::llmctl::ProgressBar(safe_status, p.completed, p.total, rate).c_str());
        drawn = true;
      } else if (!json) {
        const int decile = p.total > 0 ? static_cast<int>(p.completed * 10 / p.total) : 0;
        if (p.status != last_status || decile != last_decile) {
          std::printf("%s\n", llmd::llmctl::ProgressLine(safe_status, p.completed, p.total).c_str());
        }
        last_decile = decile;
      }
      last_status = p.status;
      std::fflush(stdout);
      return true;
    });
    if (tty && drawn) std::printf("\n");
    if (e) return Report(*e, socket, json);
    if (json) std::printf("%s\n", nlohmann::json({{"model", model}}).dump().c_str());
    else std::printf("success: model %s\n", model.c_str());
    return kOk;
  }
  if (*cp || *rm) {
    auto e = *cp ? client.CopyModel(cp_source, cp_destination) : client.DeleteModel(rm_model);
    if (e) return Report(*e, socket, json);
    if (json) std::printf("{\"ok\":true}\n");
    else if (*cp) std::printf("copied %s to %s\n", cp_source.c_str(), cp_destination.c_str());
    else std::printf("deleted %s\n", rm_model.c_str());
    return kOk;
  }
  if (*models || *ls || *ps) {
    auto r = *ps ? client.RunningModels() : client.Models();
    if (!r.has_value()) return Report(r.error(), socket, json);
    if (json) {
      std::printf("%s\n", nlohmann::json(*r).dump().c_str());
    } else {
      for (const auto& m : *r) std::printf("%s\n", m.c_str());
    }
    return kOk;
  }
  if (*health) {
    auto r = client.HealthCheck();
    if (!r.has_value()) return Report(r.error(), socket, json);
    if (json) {
      nlohmann::json j = {{"model_loaded", r->model_loaded}, {"npu_core", r->npu_core},
                          {"kv_cache_usage", r->kv_cache_usage}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("model_loaded: %s\nnpu_core: %u\nkv_cache_usage: %.3f\n", r->model_loaded ? "yes" : "no",
                  r->npu_core, r->kv_cache_usage);
    }
    return r->model_loaded ? kOk : kServerError;
  }
  if (*shutdown) {
    if (auto e = client.Shutdown()) return Report(*e, socket, json);
    if (json) std::printf("{\"stopped\":true}\n");
    else std::printf("llmd is stopping\n");
    return kOk;
  }
  return kUsage;
}
