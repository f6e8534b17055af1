// OllamaRoutes: Ollama's native API's front end (/api/*), for clients such as ollama-js and
// ollama-python: /api/chat and /api/generate (NDJSON streams by default, as Ollama, or one
// object with stream:false: OllamaSink), /api/embed and /api/embeddings, /api/tags, /api/ps,
// /api/show and /api/version; model management (pull, create, copy, delete, blobs:
// ollama_admin.cc) for root and admin_uids/admin_gids only, others 403; push is 501. Errors are Ollama's {"error":"..."} with the
// status ApiErrorOf gives; one that comes after a stream has begun is a last {"error":"..."}
// line.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `state` must
// outlive this.
#ifndef LLMD_HTTP_OLLAMA_OLLAMA_ROUTES_H_
#define LLMD_HTTP_OLLAMA_OLLAMA_ROUTES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "http/http_server.h"
#include "http/ollama/ollama_api.h"
#include "http/front_end.h"
#include "sched/server_state.h"

namespace llmd::http {

class OllamaRoutes final : public FrontEnd {
 public:
  OllamaRoutes(sched::ServerState& ctx, const ApiOptions& options);

  const char* name() const override { return "ollama"; }
  bool Claims(std::string_view path) const override { return path.starts_with("/api/") || path == "/api"; }
  std::string ErrorBody(const ApiError& error) const override { return OllamaErrorBody(error); }
  int Handle(const Request& request, Responder& out) override;

 private:
  int Generate(const Request& request, Responder& out, bool chat);
  int Embed(const Request& request, Responder& out, bool legacy);
  int Show(const Request& request, Responder& out);
  int List(Responder& out, bool running);
  // /api/pull, /api/push, /api/create, /api/copy, /api/delete, /api/blobs/* (ollama_admin.cc).
  int Manage(const Request& request, Responder& out);

  // The model a request names, loaded or not: exact, or Ollama's "NAME:latest" for NAME;
  // none: the default. Empty when no such model can be served.
  std::optional<std::string> Resolve(const std::optional<std::string>& name) const;
  // A request without a prompt: loads `model`, or unloads it (keep_alive 0).
  Status LoadOrUnload(const std::string& model, std::optional<int64_t> keep_alive_ms);
  // What tags, ps and show say about a model (the GGUF header read once per file).
  OllamaModel Describe(const sched::AvailableModel& model, const config::DaemonConfig& config);
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
