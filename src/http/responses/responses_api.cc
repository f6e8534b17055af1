// The Responses API's replies: whole responses and the event stream (the request side is
// responses_request.cc).
#include "http/responses/responses_api.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "http/api_text.h"
#include "http/block_stream.h"
#include "http/json_fields.h"
#include "http/reply_stream.h"

namespace llmd::http {
namespace {

using nlohmann::json;
// What we write keeps OpenAI's field order, for people reading it.
using ordered = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------
// Writing the Response.

// The n-th id of a kind in a response: "msg_X", "msg_X_1", ... (function calls always count).
std::string ItemId(const char* prefix, const std::string& response_id, size_t n, bool always_number = false) {
  std::string id = prefix + IdSuffix(response_id);
  if (n > 0 || always_number) id += "_" + std::to_string(n);
  return id;
}

// An output item is a block of the reply (block_stream.h): a reasoning item, a message, a
// function call, with ids from the response's and the block's number.
std::string ItemId(const ResponseContext& ctx, const Block& block) {
  switch (block.kind) {
    case BlockKind::kReasoning:
      return ItemId("rs_", ctx.id, block.number);
    case BlockKind::kText:
      return ItemId("msg_", ctx.id, block.number);
    case BlockKind::kToolCall:
      break;
  }
  return ItemId("fc_", ctx.id, block.number, true);
}

std::string CallId(const ResponseContext& ctx, const Block& call) {
  return call.call_id.empty() ? ItemId("call_", ctx.id, call.number, true) : call.call_id;
}

// Logprobs belong to the answer: the first message item.
bool IsAnswer(const Block& block) { return block.kind == BlockKind::kText && block.number == 0; }

ordered Bytes(const std::string& s) {
  ordered bytes = ordered::array();
  for (unsigned char c : s) bytes.push_back(c);
  return bytes;
}

ordered LogprobsJson(const std::vector<engine::TokenLogprob>& logprobs) {
  ordered out = ordered::array();
  for (const auto& lp : logprobs) {
    ordered top = ordered::array();
    for (const auto& [token, logprob] : lp.top) {
      top.push_back({{"token", token}, {"bytes", Bytes(token)}, {"logprob", logprob}});
    }
    out.push_back({{"token", lp.text}, {"bytes", Bytes(lp.text)}, {"logprob", lp.logprob}, {"top_logprobs", top}});
  }
  return out;
}

// A reasoning item's or a message's one content part.
ordered TextPart(const Block& block, const std::vector<engine::TokenLogprob>& logprobs) {
  if (block.kind == BlockKind::kReasoning) return {{"type", "reasoning_text"}, {"text", block.text}};
  return {{"type", "output_text"}, {"text", block.text}, {"annotations", ordered::array()},
          {"logprobs", LogprobsJson(logprobs)}};
}

// An item's fields besides the reply's; `status`: in_progress, completed or incomplete.
struct ItemView {
  const ResponseContext& ctx;
  std::string_view status;
  const std::vector<engine::TokenLogprob>& logprobs;  // the answer's (only the answer's item shows them)
};

// An output item; `with_content` false: as output_item.added shows it, before its content.
ordered ItemJson(const ItemView& v, const Block& block, bool with_content) {
  static const std::vector<engine::TokenLogprob> kNone;
  ordered content = ordered::array();
  if (with_content) content.push_back(TextPart(block, IsAnswer(block) ? v.logprobs : kNone));
  const std::string id = ItemId(v.ctx, block);
  switch (block.kind) {
    case BlockKind::kReasoning:
      return {{"id", id}, {"type", "reasoning"}, {"summary", ordered::array()}, {"content", std::move(content)},
              {"status", v.status}};
    case BlockKind::kText:
      return {{"id", id}, {"type", "message"}, {"status", v.status}, {"role", "assistant"},
              {"content", std::move(content)}};
    case BlockKind::kToolCall:
      break;
  }
  return {{"id", id}, {"type", "function_call"}, {"status", v.status}, {"arguments", with_content ? block.text : ""},
          {"call_id", CallId(v.ctx, block)}, {"name", block.name}};
}

// The output array: the items with their statuses, one per block.
ordered OutputJson(const ResponseContext& ctx, const std::vector<Block>& blocks,
                   const std::vector<std::string>& statuses, const std::vector<engine::TokenLogprob>& logprobs) {
  ordered output = ordered::array();
  for (size_t i = 0; i < blocks.size(); ++i) output.push_back(ItemJson({ctx, statuses[i], logprobs}, blocks[i], true));
  return output;
}

ordered UsageJson(const engine::GenerationStats& st) {
  ordered usage = {{"input_tokens", st.prompt_tokens},
                   {"input_tokens_details", {{"cached_tokens", st.cached_tokens}, {"cache_write_tokens", 0}}},
                   {"output_tokens", st.generated_tokens},
                   // Thinking tokens are not counted apart from the answer's.
                   {"output_tokens_details", {{"reasoning_tokens", 0}}},
                   {"total_tokens", st.prompt_tokens + st.generated_tokens}};
  // llmd's extension, only where truncation:"auto" dropped turns to fit the context.
  if (st.dropped_turns > 0) {
    usage["dropped_tokens"] = st.dropped_tokens;
    usage["dropped_turns"] = st.dropped_turns;
  }
  return usage;
}

// The Response object around `output`. Fields the request set come from the echo; the rest
// are what a stateless, foreground, untruncated response says.
ordered ResponseJson(const ResponseContext& ctx, std::string_view status, ordered output, ordered usage,
                     ordered incomplete_details = nullptr, ordered error = nullptr) {
  ordered r = {{"id", ctx.id},
               {"access_programs", nullptr},  // the standard program, implicitly
               {"object", "response"},
               {"created_at", ctx.created_at},
               {"status", status},
               {"background", false},
               {"error", std::move(error)},
               {"incomplete_details", std::move(incomplete_details)},
               {"instructions", nullptr},
               {"max_output_tokens", nullptr},
               {"max_tool_calls", nullptr},
               {"model", ctx.model},
               {"output", std::move(output)},
               {"parallel_tool_calls", true},
               {"previous_response_id", nullptr},
               {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
               {"service_tier", "default"},
               {"store", false},
               {"temperature", nullptr},
               {"text", {{"format", {{"type", "text"}}}}},
               {"tool_choice", "auto"},
               {"tools", ordered::array()},
               {"top_logprobs", 0},
               {"top_p", nullptr},
               {"truncation", "disabled"},
               {"usage", std::move(usage)},
               {"user", nullptr},
               {"metadata", ordered::object()}};
  const ordered echo = ordered::parse(ctx.echo_json, nullptr, /*allow_exceptions=*/false);
  if (echo.is_object()) {
    for (const auto& [key, value] : echo.items()) r[key] = value;
  }
  return r;
}

ordered IncompleteDetails(std::string_view status, const engine::GenerationStats& stats) {
  if (status != "incomplete") return nullptr;
  return {{"reason", stats.finish_reason == engine::FinishReason::kLength ? "max_output_tokens" : "content_filter"}};
}

// A reply without calls always has its message, empty or not, for clients that read it.
void AddEmptyMessage(BlockStream& blocks, BlockEvents& events) {
  if (!blocks.Has(BlockKind::kText) && !blocks.Has(BlockKind::kToolCall)) blocks.OpenText(BlockKind::kText, events);
}

}  // namespace

std::string_view ResponseStatusFor(const engine::GenerationStats& stats) {
  return stats.finish_reason == engine::FinishReason::kLength ? "incomplete" : "completed";
}

std::string RenderResponse(const ResponseContext& ctx, const engine::ParsedReply& reply,
                           const engine::GenerationStats& stats, std::string_view status,
                           const std::vector<engine::TokenLogprob>& logprobs) {
  BlockStream blocks = WholeReply(reply);
  BlockEvents unseen;  // no stream watches
  AddEmptyMessage(blocks, unseen);
  std::vector<std::string> statuses(blocks.blocks().size(), "completed");
  // What was cut off is the last item.
  if (status == "incomplete") statuses.back() = "incomplete";
  return DumpOrdered(ResponseJson(ctx, status, OutputJson(ctx, blocks.blocks(), statuses, logprobs), UsageJson(stats),
                           IncompleteDetails(status, stats)));
}

// ---------------------------------------------------------------------------------------
// Streaming.

// Responses' names for the block life (block_stream.h). An item's .done events carry it as it
// stands when it closes, arguments included; arguments the block stream records after that
// are in no event, but they are in the final object, which is built from the blocks.
struct ResponsesStream::State : ReplyStream {
  explicit State(ResponseContext c) : ctx(std::move(c)) {}

  ResponseContext ctx;
  uint64_t sequence = 0;
  std::vector<std::string> statuses;          // per item (block)
  std::string closing_status = "completed";   // what the item closed next becomes
  std::vector<engine::TokenLogprob> logprobs;  // the answer's, known at Finish

  void Emit(const char* type, ordered fields) {
    ordered data = {{"type", type}, {"sequence_number", sequence++}};
    for (auto& [key, value] : fields.items()) data[key] = std::move(value);
    Add(type, DumpOrdered(data));
  }

  // The fields that place an event on an item: which item, where in the output.
  ordered At(size_t index, const Block& block) const {
    ordered at = {{"item_id", ItemId(ctx, block)}, {"output_index", index}};
    if (block.kind != BlockKind::kToolCall) at["content_index"] = 0;
    return at;
  }

  ordered Item(size_t index, const Block& block, bool with_content) const {
    return ItemJson({ctx, statuses[index], logprobs}, block, with_content);
  }

  void Started() override {
    const ordered response = ResponseJson(ctx, "in_progress", ordered::array(), nullptr);
    Emit("response.created", {{"response", response}});
    Emit("response.in_progress", {{"response", response}});
  }

  void Opened(size_t index, const Block& block) override {
    statuses.push_back("in_progress");
    Emit("response.output_item.added", {{"output_index", index}, {"item", Item(index, block, false)}});
    if (block.kind == BlockKind::kToolCall) return;
    ordered fields = At(index, block);
    fields["part"] = TextPart(block, {});
    Emit("response.content_part.added", std::move(fields));
  }

  void Appended(size_t index, const Block& block, const std::string& piece) override {
    ordered fields = At(index, block);
    fields["delta"] = piece;
    switch (block.kind) {
      case BlockKind::kReasoning:
        return Emit("response.reasoning_text.delta", std::move(fields));
      case BlockKind::kText:
        fields["logprobs"] = ordered::array();  // per token only in the .done event
        return Emit("response.output_text.delta", std::move(fields));
      case BlockKind::kToolCall:
        return Emit("response.function_call_arguments.delta", std::move(fields));
    }
  }

  void Closed(size_t index, const Block& block) override {
    statuses[index] = closing_status;
    if (block.kind == BlockKind::kToolCall) {
      ordered fields = At(index, block);
      fields["arguments"] = block.text;
      Emit("response.function_call_arguments.done", std::move(fields));
    } else {
      static const std::vector<engine::TokenLogprob> kNone;
      const auto& lp = IsAnswer(block) ? logprobs : kNone;
      ordered fields = At(index, block);
      fields["text"] = block.text;
      if (block.kind == BlockKind::kText) fields["logprobs"] = LogprobsJson(lp);
      Emit(block.kind == BlockKind::kText ? "response.output_text.done" : "response.reasoning_text.done",
           std::move(fields));
      ordered part = At(index, block);
      part["part"] = TextPart(block, lp);
      Emit("response.content_part.done", std::move(part));
    }
    Emit("response.output_item.done", {{"output_index", index}, {"item", Item(index, block, true)}});
  }

  ordered Output(const std::vector<engine::TokenLogprob>& lp) const {
    return OutputJson(ctx, blocks_.blocks(), statuses, lp);
  }

  std::vector<SseEvent> Finish(const engine::ParsedReply& reply, const engine::GenerationStats& stats,
                               std::string_view status, const std::vector<engine::TokenLogprob>& lp) {
    if (ended()) return {};
    logprobs = lp;  // before the answer's item can close
    CatchUp(reply);
    AddEmptyMessage(blocks_, *this);  // as RenderResponse
    const bool completed = status == "completed";
    closing_status = completed ? "completed" : "incomplete";
    blocks_.Close(*this);
    End();
    Emit(completed ? "response.completed" : "response.incomplete",
         {{"response", ResponseJson(ctx, closing_status, Output(logprobs), UsageJson(stats),
                                    IncompleteDetails(closing_status, stats))}});
    return Take();
  }

  std::vector<SseEvent> Fail(std::string_view code, std::string_view message) {
    if (ended()) return {};
    BeginIfNeeded();
    // The item being streamed stays unfinished: no .done events for what was cut off.
    if (blocks_.open() != BlockStream::kNone) statuses[blocks_.open()] = "incomplete";
    blocks_.Abandon();
    End();
    Emit("error", {{"code", code}, {"message", message}, {"param", nullptr}});
    Emit("response.failed", {{"response", ResponseJson(ctx, "failed", Output({}), nullptr, nullptr,
                                                       {{"code", code}, {"message", message}})}});
    return Take();
  }
};

ResponsesStream::ResponsesStream(ResponseContext ctx) : state_(std::make_unique<State>(std::move(ctx))) {}
ResponsesStream::ResponsesStream(ResponsesStream&&) noexcept = default;
ResponsesStream& ResponsesStream::operator=(ResponsesStream&&) noexcept = default;
ResponsesStream::~ResponsesStream() = default;

std::vector<SseEvent> ResponsesStream::Begin() { return state_->Begin(); }

std::vector<SseEvent> ResponsesStream::Next(const ReplyDelta& delta) { return state_->Next(delta); }

std::vector<SseEvent> ResponsesStream::Finish(const engine::ParsedReply& reply, const engine::GenerationStats& stats,
                                              std::string_view status,
                                              const std::vector<engine::TokenLogprob>& logprobs) {
  return state_->Finish(reply, stats, status, logprobs);
}

std::vector<SseEvent> ResponsesStream::Fail(std::string_view code, std::string_view message) {
  return state_->Fail(code, message);
}

}  // namespace llmd::http
