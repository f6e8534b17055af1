// llmd::LocalEngine: the model in your own process, for apps that embed llmd instead of
// talking to the daemon (seed 002's engine interface: load, generate, generate_stream,
// last_stats, reset, release, chat sessions with ask and clear).
//
// It runs on the daemon's own generation path: the same continuous-batching scheduler, chat
// templates (thinking off), input sanitizing, prefix reuse and stop handling, so a prompt
// gives here what it gives through the socket. Several threads may generate at once (each
// chat from its own thread, say): their steps are batched together, up to `sequences` at a
// time; more wait their turn.
//
// Thread-safety: every method of LocalEngine and LocalChat is thread-safe; one LocalChat
// answers one Ask at a time (a second waits). A TextCallback must not call Reset or Release
// on its own engine, nor start another generation on it. Lifetime: a LocalChat must not
// outlive its LocalEngine.
#ifndef LLMD_ENGINE_H_
#define LLMD_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd {

struct LocalEngineOptions {
  // Tokens one generation may hold (prompt and answer). 0 (default): one KV pool the
  // sequences share, the model's trained context fitted to the memory available; a number:
  // that many per sequence, each with a KV cache of its own. Pages are committed as used.
  int32_t context_tokens = 0;
  int32_t threads = 0;            // 0: one per online CPU
  int32_t sequences = 4;          // generations batched together
  // Sequences beyond `sequences` kept for a higher class: an interactive generation arriving
  // while background ones fill every slot takes one, and a background one is paused for it.
  int32_t reserved_sequences = 1;
  int32_t gpu_layers = 0;         // layers to offload; -1: all
  bool sanitize = true;           // the seed's input sanitizer on user text
};

// Who waits on a generation: a person (interactive) goes before normal work, and normal work
// before background work, which is paused, never lost, while a higher class needs its slot.
enum class LocalRequestClass { kInteractive = 0, kNormal = 1, kBackground = 2 };

// What a chat turn does when the chat's history and the new message do not fit
// `context_tokens` (with one token left to generate): fail (InvalidArgument, with the counts),
// or drop the chat's oldest whole turns, keeping the system prompt and the new message; the
// chat then keeps the shorter history and last_stats() says what went. A one-shot Generate or
// Complete has no turns to drop: too long, it fails either way.
enum class LocalOverflow { kError = 0, kDropOldest = 1 };

// How one generation samples and when it stops. Defaults are the reference daemon's.
struct LocalGenerateOptions {
  int32_t max_tokens = 256;
  float temperature = 0.7f;  // 0: greedy
  float top_p = 0.9f;
  int32_t top_k = 40;
  float repeat_penalty = 1.1f;
  uint32_t seed = 0xFFFFFFFF;      // 0xFFFFFFFF: a fresh random seed
  std::vector<std::string> stop;   // the text ends before the first of these
  LocalRequestClass request_class = LocalRequestClass::kNormal;
  // > 0: the first token is wanted within this many ms; a generation the scheduler expects to
  // miss it fails at once (ResourceExhausted, with the expected wait).
  int32_t first_token_deadline_ms = 0;
  LocalOverflow overflow = LocalOverflow::kError;

  static LocalGenerateOptions Greedy(int32_t max_tokens);
};

// What the most recent generation cost (milliseconds, wall clock).
struct LocalStats {
  double load_ms = 0;
  double prefill_ms = 0;
  double ttft_ms = 0;
  double decode_ms = 0;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens reused from memory
  int32_t generated_tokens = 0;
  std::string finish_reason;  // "stop", "length" or "cancelled"
  // LocalOverflow::kDropOldest: the prompt tokens and whole turns dropped to fit the context.
  int32_t dropped_tokens = 0;
  int32_t dropped_turns = 0;
};

// Receives each piece of visible text as it is generated (whole UTF-8 characters). Return
// false to stop the generation early (finish reason "cancelled"): the call then returns
// exactly the text the callback was given, though a chat's history keeps every token the
// model generated before it stopped.
using TextCallback = std::function<bool(std::string_view text)>;

class LocalChat;

class LocalEngine {
 public:
  // Loads a GGUF model and warms it up. Errors name the file and say why.
  static Result<std::unique_ptr<LocalEngine>> Load(const std::string& path, const LocalEngineOptions& options = {});
  // Seed 002's load(path, ctx, threads).
  static Result<std::unique_ptr<LocalEngine>> Load(const std::string& path, int32_t context_tokens, int32_t threads);
  ~LocalEngine();
  LocalEngine(const LocalEngine&) = delete;
  LocalEngine& operator=(const LocalEngine&) = delete;

  // One chat turn {system, user} through the model's template; returns the reply.
  Result<std::string> Generate(std::string_view system, std::string_view user, int32_t max_tokens);
  Result<std::string> Generate(std::string_view system, std::string_view user, const LocalGenerateOptions& options);
  // The same, handing each piece of text to `on_text` as it is generated.
  Result<std::string> GenerateStream(std::string_view system, std::string_view user,
                                     const LocalGenerateOptions& options, const TextCallback& on_text);
  // A raw completion: `prompt` as plain text, no template.
  Result<std::string> Complete(std::string_view prompt, const LocalGenerateOptions& options,
                               const TextCallback& on_text = {});

  // Starts a conversation that keeps its exact history, so each turn prefills only its own
  // text.
  Result<std::unique_ptr<LocalChat>> NewChat(std::string_view system);

  // Stats of the most recent generation on this engine (any thread's; a chat's own are in
  // LocalChat::last_stats).
  LocalStats last_stats() const;
  // Forgets every cached prefix and chat history (chats start over, turns() back to 0); the
  // next request prefills from scratch. Waits for running generations to finish.
  void Reset();
  // Cancels running generations (they end as "cancelled"), then frees the model; every later
  // call is Unavailable.
  void Release();

  struct Impl;

 private:
  explicit LocalEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class LocalChat {
 public:
  ~LocalChat();
  LocalChat(const LocalChat&) = delete;
  LocalChat& operator=(const LocalChat&) = delete;

  // Sends one user message; the reply joins the history.
  Result<std::string> Ask(std::string_view user, const LocalGenerateOptions& options, const TextCallback& on_text = {});
  Result<std::string> Ask(std::string_view user, int32_t max_tokens);
  // Forgets the history; the system prompt stays.
  void Clear();
  // Turns answered since the start, the last Clear or the engine's last Reset.
  int32_t turns() const;
  // Stats of this chat's most recent turn.
  LocalStats last_stats() const;

 private:
  friend class LocalEngine;
  LocalChat(LocalEngine::Impl& engine, std::string system, std::string session);
  LocalEngine::Impl& engine_;
  const std::string system_;
  const std::string session_;
  mutable std::mutex mu_;     // one Ask at a time
  int32_t turns_ = 0;         // guarded by mu_
  uint64_t epoch_ = 0;        // guarded by mu_: the engine's Reset count when turns_ was set
  LocalStats last_;           // guarded by mu_
};

}  // namespace llmd

#endif  // LLMD_ENGINE_H_
