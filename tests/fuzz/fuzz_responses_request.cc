// The Responses API on arbitrary bytes: the request parser never crashes or throws, and what
// it accepts is a conversation the engine can take (within the documented limits, every tool
// result answering an earlier call, JSON where JSON text is promised); the renderer and the
// stream, fed the same bytes as model output (any bytes, broken UTF-8 included), always write
// valid JSON events with increasing sequence numbers. The bytes as a query string: what the
// parser accepts is names and values of bounded count, valid UTF-8 without control characters,
// and an input_items page from it is within its limits and lists as valid JSON.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "common/utf8.h"
#include "http/query_string.h"
#include "http/responses/response_input_items.h"
#include "http/responses/responses_api.h"

namespace {

using nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckRequest(const llmd::http::ResponsesRequest& r) {
  Check(r.chat && !r.messages.empty() && r.messages.back().role != "assistant");
  std::set<std::string> calls;
  for (const auto& m : r.messages) {
    Check(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool");
    for (const auto& call : m.tool_calls) {
      Check(m.role == "assistant" && !call.id.empty() && !call.name.empty() && json::accept(call.arguments));
      calls.insert(call.id);
    }
    if (m.role == "tool") Check(calls.count(m.tool_call_id) == 1);
  }
  if (r.temperature) Check(*r.temperature >= 0 && *r.temperature <= 2);
  if (r.top_p) Check(*r.top_p >= 0 && *r.top_p <= 1);
  Check(r.top_logprobs >= -1 && r.top_logprobs <= llmd::http::kMaxTopLogprobs);
  for (const auto& t : r.format.tools) {
    Check(!t.name.empty() && (t.parameters.empty() || json::parse(t.parameters).is_object()));
  }
  Check(r.format.json_schema.empty() || json::parse(r.format.json_schema).is_object());
  Check(r.format.tool_choice != llmd::engine::ToolChoice::kNamed || !r.format.tool_name.empty());
  Check(json::parse(r.echo_json).is_object());
}

// Every event is a JSON object whose type is its name, numbered from 0 without gaps.
void CheckEvents(const std::vector<llmd::http::SseEvent>& events, uint64_t* sequence) {
  for (const auto& e : events) {
    const json data = json::parse(e.data, nullptr, /*allow_exceptions=*/false);
    Check(data.is_object() && data.value("type", "") == e.event);
    Check(data.value("sequence_number", uint64_t{0}) == (*sequence)++);
  }
}

bool CleanText(const std::string& s) {
  return llmd::IsValidUtf8(s) &&
         std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

void CheckQuery(std::string_view raw) {
  auto query = llmd::http::ParseQueryString(raw);
  if (!query.has_value()) return;
  Check(query->size() <= llmd::http::kMaxQueryParams);
  for (const auto& p : *query) Check(!p.name.empty() && CleanText(p.name) && CleanText(p.value));
  auto page = llmd::http::ParseInputItemsQuery(*query);
  if (!page.has_value()) return;
  Check(page->limit >= 1 && page->limit <= llmd::http::kMaxInputItemsLimit && !(page->after && page->before));
  const llmd::http::StoredResponse stored{
      "resp_fuzz", "uid:1", 0, R"({"output":[{"id":"msg_fuzz"}]})",
      R"([{"role":"user","content":"a"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},)"
      R"({"type":"function_call_output","call_id":"c","output":"b"},{"id":"msg_fuzz","type":"message"}])"};
  auto list = llmd::http::RenderInputItems(stored, *page);
  if (list.has_value()) Check(json::parse(*list)["data"].size() <= page->limit);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckQuery(input);
  llmd::http::ResponseContext ctx{"resp_fuzz", 1, "m", "{}"};
  if (auto r = llmd::http::ParseResponsesRequest(input); r.has_value()) {
    CheckRequest(*r);
    ctx.echo_json = r->echo_json;
  }

  // The same bytes as a reply: thirds as reasoning, answer and one call's arguments.
  const std::string text(input);
  const size_t third = text.size() / 3;
  llmd::engine::ParsedReply reply{text.substr(third, third), text.substr(0, third),
                                  {{"", "f", text.substr(2 * third)}}};
  llmd::engine::GenerationStats stats;
  stats.finish_reason = size % 2 ? llmd::engine::FinishReason::kLength : llmd::engine::FinishReason::kStop;
  const std::string_view status = llmd::http::ResponseStatusFor(stats);
  const std::vector<llmd::engine::TokenLogprob> logprobs = {{text.substr(0, 4), -1.0f, {{text.substr(0, 2), -2.0f}}}};
  Check(json::accept(llmd::http::RenderResponse(ctx, reply, stats, status, logprobs)));

  // Streamed in about 12 pieces, round robin over the three parts (each switch starts a
  // new item, the worst case for the stream's bookkeeping).
  llmd::http::ResponsesStream stream(ctx);
  uint64_t sequence = 0;
  CheckEvents(stream.Begin(), &sequence);
  const size_t step = std::max<size_t>(7, text.size() / 12);
  for (size_t i = 0, n = 0; i < text.size(); i += step, ++n) {
    llmd::http::ReplyDelta delta;
    const std::string piece = text.substr(i, step);
    switch (n % 3) {
      case 0: delta.reasoning_content = piece; break;
      case 1: delta.content = piece; break;
      default: delta.tool_calls.push_back({0, n == 2 ? "call_1" : "", n == 2 ? "f" : "", piece});
    }
    CheckEvents(stream.Next(delta), &sequence);
  }
  CheckEvents(size % 3 ? stream.Finish(reply, stats, status, logprobs) : stream.Fail("server_error", text), &sequence);
  return 0;
}
