// Ollama's API on arbitrary bytes: the body parsers (chat, generate, embed, embeddings, show,
// each fed every input) never crash or throw, and what they accept is within the documented
// limits (sampling ranges, stop strings, num_ctx under the loaded context, tool calls named,
// with ids and JSON object arguments); the GGUF metadata reader, fed
// the same bytes as a model file, returns facts or an error, never a crash; and the renderers,
// fed the bytes as model output (broken UTF-8 included), always write valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "format/gguf_metadata.h"
#include "format/random_access_file.h"
#include "http/json_reply.h"
#include "http/ollama/ollama_api.h"

namespace {

using llmd::http::OllamaGenerateRequest;
using nlohmann::json;

constexpr llmd::http::OllamaLimits kLimits{2048};

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckGeneration(const OllamaGenerateRequest& o, bool chat) {
  const llmd::http::GenerationRequest& r = o.gen;
  Check(r.stop.size() <= llmd::http::kMaxStopStrings);
  for (const auto& s : r.stop) Check(s.size() <= llmd::http::kMaxStopBytes);
  if (r.temperature) Check(*r.temperature >= 0 && *r.temperature <= 2);
  if (r.top_p) Check(*r.top_p >= 0 && *r.top_p <= 1);
  if (r.top_k) Check(*r.top_k >= 1);
  if (r.presence_penalty) Check(*r.presence_penalty >= -2 && *r.presence_penalty <= 2);
  if (r.frequency_penalty) Check(*r.frequency_penalty >= -2 && *r.frequency_penalty <= 2);
  if (r.repeat_penalty) Check(*r.repeat_penalty >= 1 && *r.repeat_penalty <= 10);
  if (o.num_ctx) Check(*o.num_ctx >= 1 && *o.num_ctx <= kLimits.context_tokens);
  Check(r.n == 1 && r.logit_bias.empty());
  Check(r.top_logprobs >= -1 && r.top_logprobs <= llmd::http::kMaxTopLogprobs);
  Check(r.format.json_schema.empty() || json::parse(r.format.json_schema).is_object());
  for (const auto& t : r.format.tools) {
    Check(chat && !t.name.empty() && (t.parameters.empty() || json::parse(t.parameters).is_object()));
  }
  if (!r.chat) {  // generate with raw:true
    Check(!chat && o.raw && r.messages.empty() && r.format.plain() &&
          !r.enable_thinking.has_value());
    Check(o.load_only == r.prompt.empty());
    return;
  }
  if (o.load_only && chat) {
    Check(r.messages.empty());
    return;
  }
  Check(!r.messages.empty() && r.messages.back().role != "assistant");
  if (!chat) Check(r.messages.size() <= 2 && r.messages.back().role == "user");
  for (const auto& m : r.messages) {
    Check(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool");
    if (m.role != "assistant") Check(m.tool_calls.empty());
    for (const auto& call : m.tool_calls) {
      Check(!call.id.empty() && !call.name.empty() && json::parse(call.arguments).is_object());
    }
  }
}

void CheckEmbed(const llmd::http::OllamaEmbedRequest& r) {
  Check(r.inputs.size() <= 256);
  for (const auto& s : r.inputs) Check(!s.empty());
  if (r.dimensions) Check(*r.dimensions >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto r = llmd::http::ParseOllamaChat(input, kLimits); r.has_value()) {
    CheckGeneration(*r, true);
  }
  if (auto r = llmd::http::ParseOllamaGenerate(input, kLimits); r.has_value()) {
    CheckGeneration(*r, false);
  }
  if (auto r = llmd::http::ParseOllamaEmbed(input, kLimits); r.has_value()) CheckEmbed(*r);
  if (auto r = llmd::http::ParseOllamaEmbeddings(input, kLimits); r.has_value()) {
    CheckEmbed(*r);
    Check(r->inputs.size() <= 1);
  }
  if (auto r = llmd::http::ParseOllamaShow(input); r.has_value()) Check(!r->model.empty());

  // The bytes as a model file: metadata or an error; what is read renders as model_info.
  auto metadata = llmd::format::ReadGgufMetadata(*llmd::format::NewMemoryFile(input));
  if (metadata.has_value()) {
    const nlohmann::json info = llmd::http::OllamaModelInfo(*metadata);
    Check(info.is_object() && info.contains("general.parameter_count"));
    Check(nlohmann::json::accept(llmd::http::Dump(info)));
  }

  // The bytes as a reply: thirds as reasoning, answer and one call's arguments.
  const std::string text(input);
  const size_t third = text.size() / 3;
  const llmd::engine::ParsedReply reply{text.substr(third, third),
                                        text.substr(0, third),
                                        {{"call_1", text.substr(0, 8), text.substr(2 * third)}}};
  llmd::engine::GenerationStats stats;
  stats.prompt_tokens = static_cast<int32_t>(size % 7);
  stats.cached_tokens = static_cast<int32_t>(size % 11);
  const std::vector<llmd::engine::TokenLogprob> logprobs = {
      {text.substr(0, 4), -1.0f, {{text.substr(0, 2), -2.0f}}}};
  for (bool chat : {true, false}) {
    const llmd::http::OllamaReplyContext ctx{chat, text.substr(0, 16),
                                             "2025-01-01T00:00:00.000000000Z"};
    Check(json::accept(llmd::http::Dump(llmd::http::OllamaChunk(ctx, reply, logprobs))));
    const json final = llmd::http::OllamaFinal(ctx, reply, stats, 1, "stop", logprobs);
    Check(json::accept(llmd::http::Dump(final)));
    Check(final.at("prompt_eval_count").get<int64_t>() >= 0);
  }
  return 0;
}
