// The HTTP API's untrusted inputs on arbitrary bytes: the OpenAI body parsers (chat and
// completions, each fed every input) never crash or throw, and whatever they accept is within
// the documented limits (n, logprobs, logit_bias, tools, tool_choice, response_format, the
// tool-call history); the stop-string matcher, fed in pieces, never shows text past a stop
// string.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "chat/stop_strings.h"
#include "http/openai/openai_request.h"

namespace {

using llmd::http::GenerationRequest;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckAccepted(const GenerationRequest& r, bool chat) {
  Check(r.chat == chat);
  Check(r.stop.size() <= llmd::http::kMaxStopStrings);
  for (const auto& s : r.stop) Check(s.size() <= llmd::http::kMaxStopBytes);
  if (r.temperature) Check(*r.temperature >= 0 && *r.temperature <= 2);
  if (r.top_p) Check(*r.top_p >= 0 && *r.top_p <= 1);
  if (r.top_k) Check(*r.top_k >= 1);
  if (r.presence_penalty) Check(*r.presence_penalty >= -2 && *r.presence_penalty <= 2);
  if (r.frequency_penalty) Check(*r.frequency_penalty >= -2 && *r.frequency_penalty <= 2);
  if (r.repeat_penalty) Check(*r.repeat_penalty >= 1 && *r.repeat_penalty <= 10);
  Check(r.n >= 1 && r.n <= llmd::http::kMaxChoices);
  Check(r.top_logprobs >= -1 && r.top_logprobs <= (chat ? llmd::http::kMaxTopLogprobs : 5));
  Check(r.logit_bias.size() <= llmd::http::kMaxLogitBias);
  for (const auto& [id, bias] : r.logit_bias) Check(id >= 0 && std::isfinite(bias) && bias >= -100 && bias <= 100);

  const llmd::engine::ChatFormat& f = r.format;
  if (!chat) {
    Check(r.messages.empty() && !r.prompt.empty());
    Check(f.plain() && !r.enable_thinking.has_value());
    Check(r.max_tokens.has_value());  // completions default to 16
    return;
  }
  Check(!r.messages.empty() && r.messages.back().role != "assistant");
  for (const auto& m : r.messages) {
    Check(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool");
    if (m.role != "assistant") Check(m.tool_calls.empty());
  }
  // tools: each named, the names unique, a schema absent or a JSON object.
  std::set<std::string> names;
  for (const auto& t : f.tools) {
    Check(!t.name.empty() && names.insert(t.name).second);
    if (!t.parameters.empty()) {
      Check(nlohmann::json::parse(t.parameters, nullptr, /*allow_exceptions=*/false).is_object());
    }
  }
  using llmd::engine::ToolChoice;
  if (f.tool_choice == ToolChoice::kRequired || f.tool_choice == ToolChoice::kNamed) Check(!f.tools.empty());
  if (f.tool_choice == ToolChoice::kNamed) Check(names.count(f.tool_name) == 1);
  if (f.tool_choice != ToolChoice::kNamed) Check(f.tool_name.empty());
  // response_format: the schema is a JSON object.
  if (!f.json_schema.empty()) {
    const auto schema = nlohmann::json::parse(f.json_schema, nullptr, /*allow_exceptions=*/false);
    Check(schema.is_object());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (bool chat : {true, false}) {
    auto r = chat ? llmd::http::ParseChatRequest(input) : llmd::http::ParseCompletionRequest(input);
    if (r.has_value()) CheckAccepted(*r, chat);
  }
  // Stop strings: the first byte picks the stop string's length, the rest is the stream.
  if (size < 2) return 0;
  const size_t n = 1 + data[0] % 4;
  if (size < 1 + n) return 0;
  std::string stop(input.substr(1, n));
  std::string text(input.substr(1 + n));
  llmd::chat::StopStrings matcher({stop});
  std::string shown;
  for (size_t i = 0; i < text.size(); i += 3) shown += matcher.Push(text.substr(i, 3));
  shown += matcher.Finish();
  const size_t at = text.find(stop);
  if (shown != (at == std::string::npos ? text : text.substr(0, at))) std::abort();
  return 0;
}
