// Ollama's replies: model lists and details, NDJSON chat and generate lines, embeddings.
#include "http/ollama/ollama_api.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <utility>

#include "common/utf8.h"
#include "http/openai/embeddings_api.h"
#include "http/generation.h"
#include "http/json_reply.h"

namespace llmd::http {

using nlohmann::json;

json OllamaDetails(const OllamaModel& m) {
  const std::string family = m.facts.architecture;
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", family},
          {"families", family.empty() ? json(nullptr) : json::array({family})},
          {"parameter_size", ParameterSize(m.facts.parameter_count)},
          {"quantization_level", format::FileTypeName(m.facts.file_type)}};
}

std::vector<std::string> OllamaCapabilities(const OllamaModel& m) {
  if (m.embeddings) return {"embedding"};
  std::vector<std::string> caps = {"completion"};
  const std::string& t = m.facts.chat_template;
  if (t.find("tools") != std::string::npos) caps.push_back("tools");
  if (t.find("<think>") != std::string::npos || t.find("enable_thinking") != std::string::npos) {
    caps.push_back("thinking");
  }
  return caps;
}

json OllamaTagsEntry(const OllamaModel& m) {
  return {{"name", m.name},       {"model", m.name},    {"modified_at", m.modified_at},
          {"size", m.file_bytes}, {"digest", m.digest}, {"details", OllamaDetails(m)}};
}

json OllamaPsEntry(const OllamaModel& m) {
  return {{"name", m.name},
          {"model", m.name},
          {"size", m.memory_bytes},
          {"digest", m.digest},
          {"details", OllamaDetails(m)},
          {"expires_at", m.expires_at.empty() ? std::string("9999-12-31T23:59:59Z") : m.expires_at},
          {"size_vram", m.vram_bytes},
          {"context_length", m.context_length}};
}

namespace {

std::string G(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The settings a request to `m` gets when it sets none, as Modelfile PARAMETER lines: the
// model's manifest's (`d`, may be null) over the daemon's.
std::vector<std::pair<std::string, std::string>> ShownParameters(const OllamaModel& m, const config::DaemonConfig& c,
                                                                 const config::ModelGenerationDefaults* d) {
  const config::ModelGenerationDefaults none;
  if (d == nullptr) d = &none;
  // num_ctx as a request gets it: the manifest's, held to the model's context.
  int64_t num_ctx = m.context_length;
  if (d->context_tokens) num_ctx = m.context_length > 0 ? std::min<int64_t>(*d->context_tokens, m.context_length) : *d->context_tokens;
  std::vector<std::pair<std::string, std::string>> params = {
      {"num_ctx", std::to_string(num_ctx)},
      {"num_predict", std::to_string(std::min(d->max_tokens.value_or(c.max_new_tokens), c.max_new_tokens))},
      {"temperature", G(d->temperature.value_or(c.sampling.temperature))},
      {"top_k", std::to_string(d->top_k.value_or(c.sampling.top_k))},
      {"top_p", G(d->top_p.value_or(c.sampling.top_p))},
      {"repeat_penalty", G(d->repeat_penalty.value_or(c.sampling.repeat_penalty))},
      {"repeat_last_n", "64"}};
  if (d->presence_penalty) params.emplace_back("presence_penalty", G(*d->presence_penalty));
  if (d->frequency_penalty) params.emplace_back("frequency_penalty", G(*d->frequency_penalty));
  if (d->seed) params.emplace_back("seed", std::to_string(*d->seed));
  for (const std::string& stop : d->stop) params.emplace_back("stop", json(stop).dump());
  return params;
}

}  // namespace

std::string RenderOllamaShow(const OllamaModel& m, const config::DaemonConfig& c) {
  const config::ModelGenerationDefaults* d = config::FindModelDefaults(c, m.name);
  const auto params = ShownParameters(m, c, d);
  std::string parameters, modelfile = "# llmd serves " + m.name +
                                      (d != nullptr ? " with its manifest's settings over the config's.\n"
                                                    : " from its config; it has no Modelfile.\n") +
                                      "FROM " + m.name + "\n";
  if (d != nullptr && d->system) modelfile += "SYSTEM \"\"\"" + *d->system + "\"\"\"\n";
  if (!m.embeddings) {
    for (const auto& [k, v] : params) {
      std::string line = k;
      line.resize(std::max<size_t>(30, k.size()), ' ');  // Ollama's column
      parameters += (parameters.empty() ? "" : "\n") + line + " " + v;
      modelfile += "PARAMETER " + k + " " + v + "\n";
    }
  }
  json info = OllamaModelInfo(m.facts);
  if (!m.facts.architecture.empty() && m.context_length > 0) {
    info[m.facts.architecture + ".context_length"] = m.context_length;
  }
  json body = {{"license", ""},
               {"modelfile", modelfile},
               {"parameters", parameters},
               {"template", m.facts.chat_template},
               {"details", OllamaDetails(m)},
               {"model_info", std::move(info)},
               {"capabilities", OllamaCapabilities(m)},
               {"modified_at", m.modified_at}};
  if (d != nullptr && d->system) body["system"] = *d->system;
  return Dump(body);
}

std::string Rfc3339Nanos(std::chrono::system_clock::time_point t) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1000000000, frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    secs -= 1;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%09lldZ", static_cast<long long>(frac));
  return buf;
}

json OllamaToolCalls(const std::vector<chat::ToolCall>& calls) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json args = json::parse(calls[i].arguments, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object()) args = json::object();
    json call = {
        {"function", {{"index", i}, {"name", calls[i].name}, {"arguments", std::move(args)}}}};
    if (!calls[i].id.empty()) call["id"] = calls[i].id;
    list.push_back(std::move(call));
  }
  return list;
}

json OllamaLogprobs(const std::vector<engine::TokenLogprob>& tokens) {
  auto one = [](const std::string& text, float logprob) {
    json bytes = json::array();
    for (unsigned char ch : text) bytes.push_back(ch);
    return json{{"token", text}, {"logprob", SerializeFloat(logprob)}, {"bytes", std::move(bytes)}};
  };
  json list = json::array();
  for (const auto& t : tokens) {
    json entry = one(t.text, t.logprob);
    json top = json::array();
    for (const auto& [text, lp] : t.top) top.push_back(one(text, lp));
    entry["top_logprobs"] = std::move(top);
    list.push_back(std::move(entry));
  }
  return list;
}

namespace {

// The reply's fields: chat's message object, or generate's top-level response/thinking.
void PutReply(const OllamaReplyContext& ctx, const engine::ParsedReply& reply, json* j) {
  if (ctx.chat) {
    json message = {{"role", "assistant"}, {"content", reply.content}};
    if (!reply.reasoning_content.empty()) message["thinking"] = reply.reasoning_content;
    if (!reply.tool_calls.empty()) message["tool_calls"] = OllamaToolCalls(reply.tool_calls);
    (*j)["message"] = std::move(message);
  } else {
    (*j)["response"] = reply.content;
    if (!reply.reasoning_content.empty()) (*j)["thinking"] = reply.reasoning_content;
  }
}

int64_t Nanos(double ms) { return static_cast<int64_t>(std::llround(ms * 1e6)); }

}  // namespace

json OllamaChunk(const OllamaReplyContext& ctx, const engine::ParsedReply& piece,
                 const std::vector<engine::TokenLogprob>& logprobs) {
  json j = {{"model", ctx.model}, {"created_at", ctx.created_at}, {"done", false}};
  PutReply(ctx, piece, &j);
  if (!logprobs.empty()) j["logprobs"] = OllamaLogprobs(logprobs);
  return j;
}

std::string_view OllamaDoneReason(const engine::GenerationStats& stats, bool refused) {
  if (refused) return "content_filter";
  return stats.finish_reason == engine::FinishReason::kLength ? "length" : "stop";
}

json OllamaFinal(const OllamaReplyContext& ctx, const engine::ParsedReply& reply,
                 const engine::GenerationStats& st, int64_t total_ns, std::string_view done_reason,
                 const std::vector<engine::TokenLogprob>& logprobs) {
  json j = {{"model", ctx.model},
            {"created_at", ctx.created_at},
            {"done", true},
            {"done_reason", std::string(done_reason)},
            {"total_duration", total_ns},
            {"load_duration", 0},
            {"prompt_eval_count", std::max(0, st.prompt_tokens - st.cached_tokens)},
            {"prompt_eval_duration", Nanos(st.prefill_ms)},
            {"eval_count", st.generated_tokens},
            {"eval_duration", Nanos(st.decode_ms)}};
  // llmd's extension, only where overflow drop_oldest dropped turns to fit the context.
  if (st.dropped_turns > 0) {
    j["dropped_tokens"] = st.dropped_tokens;
    j["dropped_turns"] = st.dropped_turns;
  }
  PutReply(ctx, reply, &j);
  if (!logprobs.empty()) j["logprobs"] = OllamaLogprobs(logprobs);
  return j;
}

json OllamaLoadReply(const OllamaReplyContext& ctx, bool unload) {
  json j = {{"model", ctx.model},
            {"created_at", ctx.created_at},
            {"done", true},
            {"done_reason", unload ? "unload" : "load"}};
  PutReply(ctx, engine::ParsedReply{}, &j);
  return j;
}

std::string RenderOllamaEmbed(const std::string& model,
                              const std::vector<std::vector<float>>& vectors, int64_t total_ns,
                              int32_t prompt_tokens) {
  return Dump({{"model", model},
               {"embeddings", vectors},
               {"total_duration", total_ns},
               {"load_duration", 0},
               {"prompt_eval_count", prompt_tokens}});
}

std::string RenderOllamaEmbeddings(const std::vector<float>& vector) {
  return Dump({{"embedding", vector}});
}

std::string OllamaErrorBody(const ApiError& e) { return Dump({{"error", e.message}}); }

}  // namespace llmd::http
