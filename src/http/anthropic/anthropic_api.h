// Anthropic's Messages API (POST /v1/messages and /v1/messages/count_tokens) as a translation
// layer over chat: a request body becomes a GenerationRequest (content blocks become chat
// messages, custom tools become chat tools), and the reply becomes a Message object, whole or
// as the stream's named events.
//
// Parsing is as strict as the chat parser's: a known field of the wrong type or out of range
// is InvalidArgument naming the field ("'messages[1].content[0].type' ..."); what llmd cannot
// honour (images, documents, server tools, MCP servers, containers, a final assistant message
// to continue, ...) is InvalidArgument too; unknown fields are ignored and null counts as
// absent. Accepted and dropped, because dropping them is what the model would see anyway or
// what llmd does by itself: thinking blocks of earlier turns (chat templates leave earlier
// reasoning out), cache_control (prefixes are cached automatically), citations on earlier
// text, metadata.
//
// Thread-safety: the functions are pure; an AnthropicStream is used by one thread.
#ifndef LLMD_HTTP_ANTHROPIC_ANTHROPIC_API_H_
#define LLMD_HTTP_ANTHROPIC_ANTHROPIC_API_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/types.h"
#include "http/api_error.h"
#include "http/openai/openai_request.h"
#include "http/reply_deltas.h"
#include "http/reply_stream.h"  // SseEvent
#include "llmd/result.h"

namespace llmd::http {

constexpr size_t kMaxStopSequences = 16;  // each at most kMaxStopBytes

// A parsed Messages request: what generation needs, plus how the reply is shown.
struct AnthropicRequest : GenerationRequest {
  // thinking.display "omitted": thinking blocks come without their text (signature only).
  bool omit_thinking = false;
};

// Which body is parsed: a Messages request, or a count_tokens one (no max_tokens, sampling,
// stop_sequences or stream; the rest as for Messages).
enum class AnthropicBody { kMessages, kCountTokens };

// Reads `model` (required), `max_tokens` (required for Messages; 0 .. 2^32-1), `system` (a
// string or text blocks: the first system message), `messages` (user, assistant and system
// turns; content a string or blocks), `stop_sequences`, `temperature` (0 .. 1), `top_p`,
// `top_k`, `stream`, `tools` (custom tools into format.tools, input_schema their
// parameters), `tool_choice` (auto, any, tool, none; disable_parallel_tool_use), `thinking`
// (enabled with budget_tokens, adaptive, disabled; display), `output_config.format`
// (json_schema into format.json_schema), `metadata`; and refuses what llmd cannot do.
//
// Blocks: user turns take text and tool_result (tool_use_id of an earlier tool_use; content a
// string or text blocks; is_error prefixes the content with "Error: "); assistant turns take
// text, tool_use (id, name, input: an object; its arguments are the input as JSON text) and
// thinking / redacted_thinking (dropped). A turn's text blocks are joined with "\n", and
// consecutive turns of one role become one message, as Anthropic combines them. Every
// tool_use must be answered by a later tool_result. The result has chat = true and at least
// one message, the last not the assistant's.
Result<AnthropicRequest> ParseAnthropicRequest(std::string_view body,
                                               AnthropicBody kind = AnthropicBody::kMessages);

// How a Message ended, as its stop_reason, stop_sequence and usage say it.
struct MessageEnd {
  // end_turn, max_tokens, stop_sequence, tool_use, refusal or model_context_window_exceeded.
  std::string stop_reason = "end_turn";
  std::optional<std::string> stop_sequence;
  // A refusal's stop_details.explanation (the guard's words); empty: a generic one.
  std::string refusal_explanation;
  engine::GenerationStats stats;
};

// The stop reason of a finished reply. `tool_calls`: the reply is calls (FinalReply::
// tool_calls); `max_tokens`: the job's limit (after the configured cap), so a reply cut
// shorter than it ran out of context; `refused`: the guard refused it; `stop_sequence`: what
// MatchedStopSequence found.
MessageEnd MessageEndFor(const engine::GenerationStats& stats, bool tool_calls, int32_t max_tokens, bool refused,
                         std::optional<std::string> stop_sequence);

// Anthropic's error body: {"type":"error","error":{"type","message"}}, the type by HTTP
// status from Anthropic's documented set.
std::string AnthropicErrorBody(const ApiError& error);

// What a Message says about itself besides the reply.
struct MessageContext {
  std::string id;     // "msg_" and a unique suffix
  std::string model;  // the model the request named
  bool omit_thinking = false;  // AnthropicRequest::omit_thinking
};

// The finished Message object (JSON text): content blocks thinking (signature ""), text and
// tool_use (input: the arguments parsed; ids from the reply, "toolu_..." where missing), in
// that order, with no empty text block; usage input_tokens (the prompt tokens not read from
// the cache), cache_read_input_tokens (those that were), cache_creation_input_tokens (0),
// output_tokens.
std::string RenderMessage(const MessageContext& ctx, const engine::ParsedReply& reply, const MessageEnd& end);

// count_tokens' answer: {"input_tokens": N}.
std::string RenderTokenCount(int32_t input_tokens);

// The events of a streamed Message, in Anthropic's order: message_start (an empty Message,
// stop_reason null, usage zero: the prompt's counts are not known before the reply ends);
// per content block (thinking, text, tool_use, in the order the reply makes them, one open at
// a time) content_block_start, its deltas (thinking_delta, text_delta, input_json_delta;
// signature_delta "" closing a thinking block) and content_block_stop once the next block
// starts or the reply ends; then message_delta (stop_reason, stop_sequence, and the whole
// usage) and message_stop.
//
// Fed ReplyDelta values (ReplyDeltas::Next over successive partial parses; for a plain reply
// just {.content = text}), then Finish with the final parse: text the partial parses held
// back is sent then. Argument text for a call whose block is already closed (a parser that
// releases it only after the next call began) cannot be streamed any more. Every call returns
// the events to write, possibly none. The blocks' life is BlockStream's (block_stream.h), the
// same as the Responses stream's output items; this class only names its events.
class AnthropicStream {
 public:
  explicit AnthropicStream(MessageContext ctx);
  AnthropicStream(AnthropicStream&&) noexcept;
  AnthropicStream& operator=(AnthropicStream&&) noexcept;
  ~AnthropicStream();

  // message_start; Next and Finish send it first if not yet.
  std::vector<SseEvent> Begin();
  std::vector<SseEvent> Next(const ReplyDelta& delta);
  // The rest: the last deltas, the open block's stop, message_delta and message_stop.
  std::vector<SseEvent> Finish(const engine::ParsedReply& reply, const MessageEnd& end);
  // An error after the stream began: an "error" event ({"type":"error","error":{type,
  // message}}, as Anthropic's errors); nothing follows it.
  std::vector<SseEvent> Fail(const ApiError& error);

 private:
  struct State;  // in the .cc, where JSON is
  std::unique_ptr<State> state_;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_ANTHROPIC_ANTHROPIC_API_H_
