// The OpenAI Responses API (POST /v1/responses) as a translation layer over chat: a request
// body becomes a GenerationRequest (input items become chat messages, Responses tools become
// chat tools), and the reply becomes a Response object, whole or as the stream's typed events.
//
// Stored responses (store, default true as OpenAI's) are kept by the routes in a
// ResponseStore (response_store.h); the parser resolves previous_response_id through a lookup
// the routes give it: the previous response's conversation (as Responses items) comes before
// the new input, and its instructions are not carried over (OpenAI's rule). `conversation`
// (OpenAI's Conversations API, objects of their own) and background:true are refused. A
// client may also send the whole input every time (the function-call loop appending the
// previous response's output items to its input), which is accepted.
// Parsing is as strict as the chat parser's: a known field of the wrong type is
// InvalidArgument naming the field, anything llmd cannot honour (hosted tools, images and
// files, ...) is InvalidArgument too, unknown fields are ignored and null
// counts as absent. Two things the client sends back are accepted and dropped, because
// dropping them is what the model would see anyway: reasoning items (chat templates leave
// earlier turns' reasoning out) and include:["reasoning.encrypted_content"] (llmd's
// reasoning is plain text in the reasoning item).
//
// Output items get ids made from the response's id ("resp_X": "rs_X", "msg_X", "fc_X_0"),
// so the stream's events and the final object agree without shared state.
//
// Thread-safety: the functions are pure; a ResponsesStream is used by one thread.
#ifndef LLMD_HTTP_RESPONSES_RESPONSES_API_H_
#define LLMD_HTTP_RESPONSES_RESPONSES_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/types.h"
#include "http/openai/openai_request.h"
#include "http/reply_deltas.h"
#include "http/reply_stream.h"  // SseEvent (its data here has "sequence_number" too)
#include "llmd/result.h"

namespace llmd::http {

// A parsed Responses request: what generation needs, plus what the Response repeats back.
struct ResponsesRequest : GenerationRequest {
  // The request's fields a Response object echoes (instructions, tools, tool_choice, text,
  // reasoning, temperature, top_p, max_output_tokens, metadata, ...), as a JSON object.
  std::string echo_json = "{}";
  // store: keep the response for GET and previous_response_id (OpenAI's default: true).
  bool store = true;
  // The conversation so far as a JSON array of Responses items: the previous response's
  // (previous_response_id), then this request's input (a string input as a user message
  // item); the stored response adds its output items. Instructions are not in it.
  std::string items_json = "[]";
};

// A stored response's conversation (a JSON array of Responses items) by id, for
// previous_response_id; NotFound when there is none the caller may see.
using PreviousResponseLookup = std::function<Result<std::string>(const std::string& id)>;

// Reads `input` (a string: one user turn; or items), `instructions` (a system message
// first), `model`, `max_output_tokens`, `temperature`, `top_p`, `stream`, `tools` (function
// tools, into format.tools), `tool_choice`, `parallel_tool_calls`,
// `text.format` (json_object and json_schema into format.json_schema), `reasoning.effort`
// (none/minimal: thinking off; low and up: on), and `top_logprobs` with
// include:["message.output_text.logprobs"] (refused with tools or reasoning, as logprobs
// cover the answer only; asking for them turns thinking off).
//
// Input items: messages (developer becomes system); a function_call joins the assistant
// message right before it, or starts one (a reply's text and calls are one chat turn); a
// function_call_output is a tool message and must answer an earlier call, and every call
// must be answered. The result has chat = true and at least one message, the last not the
// assistant's.
//
// `truncation`: "auto" drops the oldest whole turns when the input does not fit the context
// (overflow drop_oldest; the usage says how many), "disabled" (the default) refuses it.
//
// `previous_response_id` is looked up with `previous` (its errors are returned as they are);
// without a lookup it is refused.
Result<ResponsesRequest> ParseResponsesRequest(std::string_view body, const PreviousResponseLookup& previous = nullptr);

// Whether `value` is one of OpenAI's ResponseIncludable names (include on POST
// /v1/responses, and on GET /v1/responses/{id} and its input_items). Besides
// message.output_text.logprobs they name items llmd never makes (searches, images, code,
// encrypted reasoning), so there is nothing more to include for them.
bool IsResponseIncludable(std::string_view value);

// What a Response object says about itself besides the reply.
struct ResponseContext {
  std::string id;          // "resp_" and a unique suffix
  int64_t created_at = 0;  // Unix seconds
  std::string model;       // the model that answered
  std::string echo_json = "{}";  // ResponsesRequest::echo_json; "{}": the defaults
};

// "incomplete" when the reply ran out of tokens (max_output_tokens or the context), else
// "completed".
std::string_view ResponseStatusFor(const engine::GenerationStats& stats);

// The finished Response object (JSON text). `status`: "completed" or "incomplete"; an
// incomplete reply's incomplete_details.reason is "max_output_tokens" when it ran out of
// tokens, else "content_filter" (the guard refused it). Tool calls without an id get one.
// `logprobs`: per generated token when include asked for them (the reply is then the answer
// only, so they all belong to its text).
std::string RenderResponse(const ResponseContext& ctx, const engine::ParsedReply& reply,
                           const engine::GenerationStats& stats, std::string_view status,
                           const std::vector<engine::TokenLogprob>& logprobs = {});

// The events of a streamed Response, in OpenAI's order: response.created and
// response.in_progress; per output item (reasoning, message, function call, in the order
// the reply makes them) output_item.added, content_part.added (not for function calls),
// its deltas, then its .done events once the next item starts or the reply ends; and
// response.completed or response.incomplete with the whole object.
//
// Fed ReplyDelta values (ReplyDeltas::Next over successive partial parses; for a plain reply
// just {.content = text}), then Finish with the final parse: text the partial parses held
// back is sent then. Argument text for a call whose item is already done (a parser that
// releases it only after the next call began) cannot be streamed any more; it is in the
// final object. Every call returns the events to write, possibly none. The items' life is
// BlockStream's (block_stream.h), the same as the Anthropic stream's content blocks; this class
// only names its events.
class ResponsesStream {
 public:
  explicit ResponsesStream(ResponseContext ctx);
  ResponsesStream(ResponsesStream&&) noexcept;
  ResponsesStream& operator=(ResponsesStream&&) noexcept;
  ~ResponsesStream();

  // response.created and response.in_progress; Next and Finish send them first if not yet.
  std::vector<SseEvent> Begin();
  std::vector<SseEvent> Next(const ReplyDelta& delta);
  // The rest: the last deltas, the open item's .done events, then response.completed
  // (status "completed") or response.incomplete (status "incomplete", as RenderResponse).
  std::vector<SseEvent> Finish(const engine::ParsedReply& reply, const engine::GenerationStats& stats,
                               std::string_view status,
                               const std::vector<engine::TokenLogprob>& logprobs = {});
  // An error after the stream began: an "error" event, then response.failed. `code` is one
  // of OpenAI's ResponseError codes ("server_error", "rate_limit_exceeded", ...).
  std::vector<SseEvent> Fail(std::string_view code, std::string_view message);

 private:
  struct State;  // in the .cc, where JSON is
  std::unique_ptr<State> state_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RESPONSES_RESPONSES_API_H_
