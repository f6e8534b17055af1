// The Responses API's replies: whole responses and the event stream (the request side is
// responses_request.cc).
#include "http/responses_api.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "http/json_fields.h"

namespace llmd::http {
namespace {

using nlohmann::json;
// What we write keeps OpenAI's field order, for people reading it.
using ordered = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------
// Writing the Response.

// Model text may hold invalid UTF-8 (a token can be part of a character): replaced, never thrown.
std::string Dump(const ordered& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// "resp_X" -> "X": the part output item ids share.
std::string IdSuffix(const std::string& response_id) {
  const size_t underscore = response_id.find('_');
  return underscore == std::string::npos ? response_id : response_id.substr(underscore + 1);
}

// The n-th id of a kind in a response: "msg_X", "msg_X_1", ... (function calls always count).
std::string ItemId(const char* prefix, const std::string& response_id, size_t n, bool always_number = false) {
  std::string id = prefix + IdSuffix(response_id);
  if (n > 0 || always_number) id += "_" + std::to_string(n);
  return id;
}

struct OutputItem {
  enum class Kind { kReasoning, kMessage, kFunctionCall } kind;
  std::string id;
  std::string text;  // the reasoning, the answer or the arguments
  std::string call_id, name;
  std::string status = "in_progress";
};

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

ordered TextPart(const OutputItem& item, const std::vector<engine::TokenLogprob>& logprobs) {
  if (item.kind == OutputItem::Kind::kReasoning) return {{"type", "reasoning_text"}, {"text", item.text}};
  return {{"type", "output_text"}, {"text", item.text}, {"annotations", ordered::array()},
          {"logprobs", LogprobsJson(logprobs)}};
}

// An output item; `with_content` false: as output_item.added shows it, before its content.
ordered ItemJson(const OutputItem& item, bool with_content, const std::vector<engine::TokenLogprob>& logprobs = {}) {
  ordered content = ordered::array();
  if (with_content) content.push_back(TextPart(item, logprobs));
  switch (item.kind) {
    case OutputItem::Kind::kReasoning:
      return {{"id", item.id}, {"type", "reasoning"}, {"summary", ordered::array()}, {"content", std::move(content)},
              {"status", item.status}};
    case OutputItem::Kind::kMessage:
      return {{"id", item.id}, {"type", "message"}, {"status", item.status}, {"role", "assistant"},
              {"content", std::move(content)}};
    case OutputItem::Kind::kFunctionCall:
      break;
  }
  return {{"id", item.id}, {"type", "function_call"}, {"status", item.status},
          {"arguments", with_content ? item.text : ""}, {"call_id", item.call_id}, {"name", item.name}};
}

// Logprobs belong to the answer: the first message item.
ordered OutputJson(const std::vector<OutputItem>& items, const std::vector<engine::TokenLogprob>& logprobs) {
  ordered output = ordered::array();
  bool first_message = true;
  for (const OutputItem& item : items) {
    const bool answer = item.kind == OutputItem::Kind::kMessage && first_message;
    if (item.kind == OutputItem::Kind::kMessage) first_message = false;
    output.push_back(ItemJson(item, true, answer ? logprobs : std::vector<engine::TokenLogprob>{}));
  }
  return output;
}

ordered UsageJson(const engine::GenerationStats& st) {
  return {{"input_tokens", st.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", st.cached_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", st.generated_tokens},
          // Thinking tokens are not counted apart from the answer's.
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", st.prompt_tokens + st.generated_tokens}};
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

// What `now` adds to `sent` when it extends it; nothing when it does not.
std::string Extension(const std::string& sent, const std::string& now) {
  if (now.size() <= sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
  return now.substr(sent.size());
}

}  // namespace

std::string_view ResponseStatusFor(const engine::GenerationStats& stats) {
  return stats.finish_reason == engine::FinishReason::kLength ? "incomplete" : "completed";
}

std::string RenderResponse(const ResponseContext& ctx, const engine::ParsedReply& reply,
                           const engine::GenerationStats& stats, std::string_view status,
                           const std::vector<engine::TokenLogprob>& logprobs) {
  using Kind = OutputItem::Kind;
  std::vector<OutputItem> items;
  if (!reply.reasoning_content.empty()) {
    items.push_back({Kind::kReasoning, ItemId("rs_", ctx.id, 0), reply.reasoning_content});
  }
  // A reply without calls always has its message, empty or not, for clients that read it.
  if (!reply.content.empty() || reply.tool_calls.empty()) {
    items.push_back({Kind::kMessage, ItemId("msg_", ctx.id, 0), reply.content});
  }
  for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
    const chat::ToolCall& call = reply.tool_calls[i];
    items.push_back({Kind::kFunctionCall, ItemId("fc_", ctx.id, i, true), call.arguments,
                     call.id.empty() ? ItemId("call_", ctx.id, i, true) : call.id, call.name});
  }
  for (OutputItem& item : items) item.status = "completed";
  // What was cut off is the last item.
  if (status == "incomplete") items.back().status = "incomplete";
  return Dump(ResponseJson(ctx, status, OutputJson(items, logprobs), UsageJson(stats),
                           IncompleteDetails(status, stats)));
}

// ---------------------------------------------------------------------------------------
// Streaming.

struct ResponsesStream::State {
  using Kind = OutputItem::Kind;
  static constexpr size_t kNone = static_cast<size_t>(-1);

  ResponseContext ctx;
  bool begun = false, finished = false;
  uint64_t sequence = 0;
  std::vector<OutputItem> items;
  size_t open = kNone;             // the item being streamed
  std::vector<size_t> call_items;  // per tool call index: its item, or kNone
  size_t reasonings = 0, messages = 0;
  size_t answer = kNone;           // the first message item, which the logprobs belong to
  std::vector<engine::TokenLogprob> logprobs;
  std::vector<SseEvent> out;       // the events of the current call

  void Emit(const char* type, ordered fields) {
    ordered data = {{"type", type}, {"sequence_number", sequence++}};
    for (auto& [key, value] : fields.items()) data[key] = std::move(value);
    out.push_back({type, Dump(data)});
  }

  // The fields that place an event on the item: which item, where in the output.
  ordered At(size_t index, bool with_content_index = true) const {
    ordered at = {{"item_id", items[index].id}, {"output_index", index}};
    if (with_content_index) at["content_index"] = 0;
    return at;
  }

  void BeginIfNeeded() {
    if (begun) return;
    begun = true;
    const ordered response = ResponseJson(ctx, "in_progress", ordered::array(), nullptr);
    Emit("response.created", {{"response", response}});
    Emit("response.in_progress", {{"response", response}});
  }

  void Open(OutputItem item) {
    CloseOpen("completed");
    items.push_back(std::move(item));
    open = items.size() - 1;
    const OutputItem& it = items[open];
    Emit("response.output_item.added", {{"output_index", open}, {"item", ItemJson(it, false)}});
    if (it.kind == Kind::kFunctionCall) return;
    ordered fields = At(open);
    fields["part"] = TextPart(it, {});
    Emit("response.content_part.added", std::move(fields));
  }

  void OpenText(Kind kind) {
    const bool reasoning = kind == Kind::kReasoning;
    size_t& count = reasoning ? reasonings : messages;
    Open({kind, ItemId(reasoning ? "rs_" : "msg_", ctx.id, count++), ""});
    if (!reasoning && answer == kNone) answer = open;
  }

  void AppendText(Kind kind, const std::string& text) {
    if (text.empty()) return;
    if (open == kNone || items[open].kind != kind) OpenText(kind);
    items[open].text += text;
    ordered fields = At(open);
    fields["delta"] = text;
    if (kind == Kind::kMessage) {
      fields["logprobs"] = ordered::array();  // per token only in the .done event
      Emit("response.output_text.delta", std::move(fields));
    } else {
      Emit("response.reasoning_text.delta", std::move(fields));
    }
  }

  bool CallKnown(size_t index) const { return index < call_items.size() && call_items[index] != kNone; }

  void OpenCall(size_t index, std::string call_id, std::string name) {
    if (call_id.empty()) call_id = ItemId("call_", ctx.id, index, true);
    Open({Kind::kFunctionCall, ItemId("fc_", ctx.id, index, true), "", std::move(call_id), std::move(name)});
    if (call_items.size() <= index) call_items.resize(index + 1, kNone);
    call_items[index] = open;
  }

  // Arguments for a call whose item is done already stay out of the stream, but not out of
  // the final object.
  void AppendArguments(size_t index, const std::string& arguments) {
    if (arguments.empty() || !CallKnown(index)) return;
    const size_t item = call_items[index];
    items[item].text += arguments;
    if (item != open) return;
    ordered fields = At(item, false);
    fields["delta"] = arguments;
    Emit("response.function_call_arguments.delta", std::move(fields));
  }


  void CloseOpen(const char* status) {
    if (open == kNone) return;
    const size_t index = open;
    open = kNone;
    OutputItem& it = items[index];
    it.status = status;
    const std::vector<engine::TokenLogprob> none;
    const auto& lp = index == answer ? logprobs : none;
    if (it.kind == Kind::kFunctionCall) {
      ordered fields = At(index, false);
      fields["arguments"] = it.text;
      Emit("response.function_call_arguments.done", std::move(fields));
    } else {
      ordered fields = At(index);
      fields["text"] = it.text;
      if (it.kind == Kind::kMessage) {
        fields["logprobs"] = LogprobsJson(lp);
        Emit("response.output_text.done", std::move(fields));
      } else {
        Emit("response.reasoning_text.done", std::move(fields));
      }
      ordered part = At(index);
      part["part"] = TextPart(it, lp);
      Emit("response.content_part.done", std::move(part));
    }
    Emit("response.output_item.done", {{"output_index", index}, {"item", ItemJson(it, true, lp)}});
  }

  std::string Streamed(Kind kind) const {
    std::string text;
    for (const OutputItem& it : items) {
      if (it.kind == kind) text += it.text;
    }
    return text;
  }

  bool Has(Kind kind) const {
    return std::any_of(items.begin(), items.end(), [&](const OutputItem& it) { return it.kind == kind; });
  }

  std::vector<SseEvent> Take() { return std::exchange(out, {}); }
};

ResponsesStream::ResponsesStream(ResponseContext ctx) : state_(std::make_unique<State>()) {
  state_->ctx = std::move(ctx);
}
ResponsesStream::ResponsesStream(ResponsesStream&&) noexcept = default;
ResponsesStream& ResponsesStream::operator=(ResponsesStream&&) noexcept = default;
ResponsesStream::~ResponsesStream() = default;

std::vector<SseEvent> ResponsesStream::Begin() {
  state_->BeginIfNeeded();
  return state_->Take();
}

std::vector<SseEvent> ResponsesStream::Next(const ReplyDelta& delta) {
  State& s = *state_;
  if (s.finished) return {};
  s.BeginIfNeeded();
  s.AppendText(State::Kind::kReasoning, delta.reasoning_content);
  s.AppendText(State::Kind::kMessage, delta.content);
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (!s.CallKnown(call.index)) s.OpenCall(call.index, call.id, call.name);
    s.AppendArguments(call.index, call.arguments);
  }
  return s.Take();
}

std::vector<SseEvent> ResponsesStream::Finish(const engine::ParsedReply& reply, const engine::GenerationStats& stats,
                                              std::string_view status,
                                              const std::vector<engine::TokenLogprob>& logprobs) {
  using Kind = State::Kind;
  State& s = *state_;
  if (s.finished) return {};
  s.BeginIfNeeded();
  s.logprobs = logprobs;
  // Text the partial parses held back.
  s.AppendText(Kind::kReasoning, Extension(s.Streamed(Kind::kReasoning), reply.reasoning_content));
  s.AppendText(Kind::kMessage, Extension(s.Streamed(Kind::kMessage), reply.content));
  for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
    const chat::ToolCall& call = reply.tool_calls[i];
    if (!s.CallKnown(i)) s.OpenCall(i, call.id, call.name);
    s.AppendArguments(i, Extension(s.items[s.call_items[i]].text, call.arguments));
  }
  // As RenderResponse: a reply without calls always has its message.
  if (!s.Has(Kind::kMessage) && !s.Has(Kind::kFunctionCall)) s.OpenText(Kind::kMessage);
  const bool completed = status == "completed";
  const std::string_view final_status = completed ? "completed" : "incomplete";
  s.CloseOpen(completed ? "completed" : "incomplete");
  s.finished = true;
  s.Emit(completed ? "response.completed" : "response.incomplete",
         {{"response", ResponseJson(s.ctx, final_status, OutputJson(s.items, s.logprobs), UsageJson(stats),
                                    IncompleteDetails(final_status, stats))}});
  return s.Take();
}

std::vector<SseEvent> ResponsesStream::Fail(std::string_view code, std::string_view message) {
  State& s = *state_;
  if (s.finished) return {};
  s.BeginIfNeeded();
  // The item being streamed stays unfinished: no .done events for what was cut off.
  if (s.open != State::kNone) s.items[s.open].status = "incomplete";
  s.open = State::kNone;
  s.finished = true;
  s.Emit("error", {{"code", code}, {"message", message}, {"param", nullptr}});
  s.Emit("response.failed", {{"response", ResponseJson(s.ctx, "failed", OutputJson(s.items, {}), nullptr, nullptr,
                                                       {{"code", code}, {"message", message}})}});
  return s.Take();
}

}  // namespace llmd::http
