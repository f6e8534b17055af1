// OpenAiRoutes: the OpenAI-compatible API on top of the engine workers: /v1/chat/completions,
// /v1/completions, /v1/responses (all three with SSE streaming), /v1/embeddings, /v1/models, llama-server's
// /tokenize and /detokenize, /health and /metrics. Errors are
// OpenAI error JSON with the matching HTTP status.
//
// Unix socket peers were already admitted by their credentials. TCP peers must send an
// allowed Host header (against DNS rebinding) and, except for /health, the API key as
// "Authorization: Bearer KEY" (compared in constant time). No CORS headers are ever sent.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `ctx` must
// outlive this.
#ifndef LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_
#define LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "http/http_server.h"
#include "http/openai/openai_request.h"
#include "sched/server_state.h"

namespace llmd::http {

struct ApiOptions {
  std::string api_key;                     // required from TCP peers; empty: TCP is refused
  std::vector<std::string> allowed_hosts;  // Host header values TCP peers may send
  int64_t started_unix = 0;                // "created" of the models in /v1/models
};

class AnthropicRoutes;
class OllamaRoutes;

class OpenAiRoutes {
 public:
  OpenAiRoutes(sched::ServerState& ctx, ApiOptions options);
  ~OpenAiRoutes();
  void Handle(const Request& request, Responder& out);

 private:
  // Each returns the HTTP status it sent, 0 when the client left first.
  int Route(const Request& request, Responder& out);
  int Generate(const Request& request, Responder& out, bool chat);
  int Tokenizer(const Request& request, Responder& out, bool tokenize);
  int Embeddings(const Request& request, Responder& out);
  int Responses(const Request& request, Responder& out);
  struct ChoiceState;

  sched::ServerState& ctx_;
  const ApiOptions options_;
  // The other APIs on the same sockets (/api/*, /v1/messages*), after the shared checks.
  std::unique_ptr<AnthropicRoutes> anthropic_;
  std::unique_ptr<OllamaRoutes> ollama_;
};

// Constant-time comparison (its time depends only on the length of `given`).
bool ConstantTimeEquals(const std::string& given, const std::string& expected);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_
