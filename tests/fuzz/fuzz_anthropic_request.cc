// The Anthropic Messages API on arbitrary bytes: the request parser never crashes or throws,
// and what it accepts is a conversation the engine can take (within the documented limits,
// every tool result answering an earlier call, JSON where JSON text is promised); the renderer
// and the stream, fed the same bytes as model output (any bytes, broken UTF-8 included),
// always write valid JSON events named as their type, in Anthropic's order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "http/anthropic/anthropic_api.h"
#include "http/generation.h"

namespace {

using nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckRequest(const llmd::http::AnthropicRequest& r, bool count_tokens) {
  Check(r.chat && !r.messages.empty() && r.messages.back().role != "assistant");
  Check(r.model.has_value() && !r.model->empty());
  Check(count_tokens || r.max_tokens.has_value());
  std::set<std::string> calls;
  for (const auto& m : r.messages) {
    Check(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool");
    for (const auto& call : m.tool_calls) {
      Check(m.role == "assistant" && !call.id.empty() && !call.name.empty() && json::parse(call.arguments).is_object());
      calls.insert(call.id);
    }
    if (m.role == "tool") Check(calls.count(m.tool_call_id) == 1);
  }
  if (r.temperature) Check(*r.temperature >= 0 && *r.temperature <= 1);
  if (r.top_p) Check(*r.top_p >= 0 && *r.top_p <= 1);
  if (r.top_k) Check(*r.top_k >= 1);
  Check(r.stop.size() <= llmd::http::kMaxStopSequences);
  for (const auto& s : r.stop) Check(!s.empty() && s.size() <= llmd::http::kMaxStopBytes);
  for (const auto& t : r.format.tools) Check(!t.name.empty() && json::parse(t.parameters).is_object());
  Check(r.format.json_schema.empty() || json::parse(r.format.json_schema).is_object());
  Check(r.format.tool_choice != llmd::engine::ToolChoice::kNamed || !r.format.tool_name.empty());
  Check(!r.omit_thinking || r.enable_thinking == true);
}

// Each event is a JSON object whose type is its name; blocks open and close in order, one at
// a time, and the message ends with message_delta and message_stop (or an error).
struct EventChecker {
  bool started = false, ended = false;
  int64_t open = -1, next = 0;

  void Add(const std::vector<llmd::http::SseEvent>& events) {
    for (const auto& e : events) {
      const json data = json::parse(e.data, nullptr, /*allow_exceptions=*/false);
      Check(data.is_object() && data.value("type", "") == e.event);
      Check(!ended);
      if (e.event == "error") {
        ended = true;
      } else if (e.event == "message_start") {
        Check(!started);
        started = true;
      } else if (e.event == "content_block_start") {
        Check(started && open < 0 && data.value("index", int64_t{-1}) == next);
        open = next++;
      } else if (e.event == "content_block_delta") {
        Check(open >= 0 && data.value("index", int64_t{-1}) == open);
      } else if (e.event == "content_block_stop") {
        Check(open >= 0 && data.value("index", int64_t{-1}) == open);
        open = -1;
      } else if (e.event == "message_delta") {
        Check(started && open < 0);
      } else if (e.event == "message_stop") {
        ended = true;
      } else {
        Check(false);
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  bool omit = false;
  for (auto kind : {llmd::http::AnthropicBody::kMessages, llmd::http::AnthropicBody::kCountTokens}) {
    if (auto r = llmd::http::ParseAnthropicRequest(input, kind); r.has_value()) {
      CheckRequest(*r, kind == llmd::http::AnthropicBody::kCountTokens);
      omit = omit || r->omit_thinking;
    }
  }
  const llmd::http::MessageContext ctx{"msg_fuzz", "m", omit || size % 5 == 0};

  // The same bytes as a reply: thirds as thinking, answer and one call's arguments.
  const std::string text(input);
  const size_t third = text.size() / 3;
  llmd::engine::ParsedReply reply{text.substr(third, third), text.substr(0, third),
                                  {{"", "f", text.substr(2 * third)}}};
  llmd::engine::GenerationStats stats;
  stats.finish_reason = size % 2 ? llmd::engine::FinishReason::kLength : llmd::engine::FinishReason::kStop;
  stats.generated_tokens = static_cast<int32_t>(size % 7);
  const auto stop = llmd::http::MatchedStopSequence({text.substr(0, 3), text.substr(size / 2, 2)}, text, size % 4);
  if (stop) Check(text.find(*stop) != std::string::npos);
  const llmd::http::MessageEnd end = llmd::http::MessageEndFor(stats, size % 3 == 0, 5, size % 11 == 0, stop);
  Check(json::accept(llmd::http::RenderMessage(ctx, reply, end)));

  // Streamed in about 12 pieces, round robin over the three parts (each switch starts a new
  // block, the worst case for the stream's bookkeeping).
  llmd::http::AnthropicStream stream(ctx);
  EventChecker events;
  events.Add(stream.Begin());
  const size_t step = std::max<size_t>(7, text.size() / 12);
  for (size_t i = 0, n = 0; i < text.size(); i += step, ++n) {
    llmd::http::ReplyDelta delta;
    const std::string piece = text.substr(i, step);
    switch (n % 3) {
      case 0: delta.reasoning_content = piece; break;
      case 1: delta.content = piece; break;
      default: delta.tool_calls.push_back({0, n == 2 ? "toolu_1" : "", n == 2 ? "f" : "", piece});
    }
    events.Add(stream.Next(delta));
  }
  events.Add(size % 3 ? stream.Finish(reply, end) : stream.Fail({500, "server_error", "internal_error", text, {}}));
  Check(events.ended);
  return 0;
}
