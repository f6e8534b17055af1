// OllamaRoutes: Ollama's native API (/api/*) on top of the engine workers, for clients such
// as ollama-js and ollama-python: /api/chat and /api/generate (NDJSON streams by default, as
// Ollama, or one object with stream:false), /api/embed and /api/embeddings, /api/tags,
// /api/ps, /api/show and /api/version. Model management (pull, push, create, copy, delete,
// blobs) is 501: llmd serves the models its config names. Errors are Ollama's
// {"error":"..."} with the status ApiErrorOf gives; one that comes after a stream has
// begun is a last {"error":"..."} line.
//
// Generation goes through the same job builder, reply parser and request runner as the
// OpenAI routes (generation.h, sched::RequestRunner); a client that leaves mid-stream
// cancels its job. The access checks (Host, Origin, API key), the loading and stopping
// checks and the rate limit are the caller's (OpenAiRoutes::Route), done before Handle.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `ctx` must
// outlive this.
#ifndef LLMD_HTTP_OLLAMA_OLLAMA_ROUTES_H_
#define LLMD_HTTP_OLLAMA_OLLAMA_ROUTES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "http/http_server.h"
#include "http/ollama/ollama_api.h"
#include "http/openai/openai_routes.h"
#include "sched/server_state.h"

namespace llmd::http {

class OllamaRoutes {
 public:
  OllamaRoutes(sched::ServerState& ctx, const ApiOptions& options);
  // Any path under /api/, after the Host/Origin/API-key, loading, stopping and rate-limit
  // checks. Returns the HTTP status sent, 0 when the client left first.
  int Handle(const Request& request, Responder& out);

 private:
  int Generate(const Request& request, Responder& out, bool chat);
  int Embed(const Request& request, Responder& out, bool legacy);
  int Show(const Request& request, Responder& out);
  int List(Responder& out, bool running);

  // The loaded model a request names: exact, or Ollama's "NAME:latest" for NAME; none: the
  // default. Empty when no such model is loaded.
  std::optional<std::string> Resolve(const std::optional<std::string>& name) const;
  // What tags, ps and show say about a loaded model (the GGUF header read once per file).
  OllamaModel Describe(const std::string& name, const config::DaemonConfig& config);
  OllamaLimits Limits(const config::DaemonConfig& config) const;

  sched::ServerState& ctx_;
  const ApiOptions options_;
  struct CachedFacts {
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
    std::shared_ptr<const format::GgufMetadata> facts;
  };
  std::mutex facts_mu_;
  std::map<std::string, CachedFacts> facts_;  // by file path; guarded by facts_mu_
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_OLLAMA_OLLAMA_ROUTES_H_
