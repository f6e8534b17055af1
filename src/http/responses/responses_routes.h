// ResponsesRoutes: the OpenAI Responses API's front end: POST /v1/responses (one Response
// object or its SSE events, ResponsesSink), and the stored responses (ResponseStore):
// GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items
// (response_input_items.h), and previous_response_id. A stored response is its
// owner's (response_owner.h): anyone else gets the 404 of an id never stored. Errors are
// OpenAI's error JSON. /metrics shows the store's count and bytes.
//
// Thread-safety: Handle may run on many connection threads at once. Lifetime: `state` must
// outlive this.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "http/front_end.h"
#include "http/openai/openai_render.h"
#include "http/responses/response_store.h"
#include "sched/server_state.h"

namespace llmd::http {

class ResponsesRoutes final : public FrontEnd {
 public:
  ResponsesRoutes(sched::ServerState& state, ApiOptions options, std::shared_ptr<ResponseStore> store)
      : state_(state), options_(std::move(options)), store_(std::move(store)) {}

  const char* name() const override { return "responses"; }
  bool Claims(std::string_view path) const override {
    return path == "/v1/responses" || path.starts_with("/v1/responses/");
  }
  std::string ErrorBody(const ApiError& error) const override { return OpenAiErrorBody(error); }
  int Handle(const Request& request, Responder& out) override;
  void AppendMetrics(std::string* page) const override;

 private:
  int Create(const Request& request, Responder& out);
  int Retrieve(const Request& request, Responder& out, const std::string& id);
  int Delete(const Request& request, Responder& out, const std::string& id);
  int InputItems(const Request& request, Responder& out, const std::string& id);
  // Who owns what `request` stores, and may see it.
  std::string Owner(const Request& request) const;

  sched::ServerState& state_;
  const ApiOptions options_;
  const std::shared_ptr<ResponseStore> store_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_ROUTES_H_
