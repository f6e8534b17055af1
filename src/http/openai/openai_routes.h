// OpenAiRoutes: the OpenAI-compatible API's front end: /v1/chat/completions and
// /v1/completions (one object or an SSE stream: OpenAiSink), /v1/embeddings, /v1/models, and
// llama-server's /tokenize and /detokenize. Errors are OpenAI's error JSON. It is the default
// front end: it claims every /v1/ path another front end does not, so an unknown /v1/ path is
// OpenAI's 404.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `state` must
// outlive this.
#ifndef LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_
#define LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_

#include <string>
#include <string_view>

#include "http/front_end.h"
#include "http/openai/openai_render.h"
#include "sched/server_state.h"

namespace llmd::http {

class OpenAiRoutes final : public FrontEnd {
 public:
  OpenAiRoutes(sched::ServerState& state, const ApiOptions& options);

  const char* name() const override { return "openai"; }
  bool Claims(std::string_view path) const override;
  std::string ErrorBody(const ApiError& error) const override { return OpenAiErrorBody(error); }
  int Handle(const Request& request, Responder& out) override;

 private:
  int Generate(const Request& request, Responder& out, bool chat);
  int Tokenize(const Request& request, Responder& out);
  int Detokenize(const Request& request, Responder& out);
  int Embeddings(const Request& request, Responder& out);
  int Models(Responder& out);

  sched::ServerState& state_;
  const int64_t started_unix_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_OPENAI_ROUTES_H_
