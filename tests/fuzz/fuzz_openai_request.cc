// The HTTP API's untrusted inputs on arbitrary bytes: the OpenAI body parsers never crash or
// throw, and whatever they accept is within the documented limits; the stop-string matcher,
// fed in pieces, never shows text past a stop string.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/stop_strings.h"
#include "http/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (bool chat : {true, false}) {
    auto r = chat ? llmd::http::ParseChatRequest(input) : llmd::http::ParseCompletionRequest(input);
    if (!r.has_value()) continue;
    if (r->stop.size() > llmd::http::kMaxStopStrings) std::abort();
    for (const auto& s : r->stop) {
      if (s.size() > llmd::http::kMaxStopBytes) std::abort();
    }
    if (r->temperature && !(*r->temperature >= 0 && *r->temperature <= 2)) std::abort();
    if (r->top_p && !(*r->top_p >= 0 && *r->top_p <= 1)) std::abort();
    if (chat && r->messages.empty()) std::abort();
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
