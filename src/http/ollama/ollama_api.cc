#include "http/ollama/ollama_api.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/duration.h"
#include "common/utf8.h"
#include "http/chat_json.h"
#include "http/chat_surface.h"
#include "http/openai/embeddings_api.h"
#include "http/generation.h"
#include "http/json_fields.h"
#include "http/json_reply.h"
#include "http/overflow_fields.h"

namespace llmd::http {
namespace {

using nlohmann::json;

Status ReadString(const json& obj, const char* key, std::string* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_string()) return TypeError(key, "a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

std::string Range(double lo, double hi) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g..%g", lo, hi);
  return buf;
}

Status NumberIn(const json& v, const std::string& field, double lo, double hi,
                std::optional<float>* out) {
  if (!v.is_number()) return TypeError(field, "a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return InvalidArgumentError("'" + field + "' must be in " + Range(lo, hi));
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

// An integer in lo..hi (int64 range), the type and the range named in the error.
Status IntegerIn(const json& v, const std::string& field, int64_t lo, int64_t hi, int64_t* out) {
  if (!v.is_number_integer()) return TypeError(field, "an integer");
  const bool too_big =
      v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  if (too_big || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    return InvalidArgumentError("'" + field + "' must be in " + std::to_string(lo) + ".." +
                                std::to_string(hi));
  }
  *out = v.get<int64_t>();
  return Status::Ok();
}

// Model names: "NAME" or Ollama's "NAME:TAG" (the routes resolve ":latest").
Status ReadModel(const json& body, std::optional<std::string>* model) {
  const json* m = Field(body, "model");
  if (m == nullptr) return Status::Ok();
  if (!m->is_string()) return TypeError("model", "a string");
  if (!m->get<std::string>().empty()) *model = m->get<std::string>();
  return Status::Ok();
}

// keep_alive: how long the model keeps its working memory after this request, as a duration
// ("5m", "90s", "0") or a number of seconds; negative: until a later request says otherwise.
Status ReadKeepAlive(const json& body, std::optional<int64_t>* keep_alive_ms) {
  const json* v = Field(body, "keep_alive");
  if (v == nullptr) return Status::Ok();
  const char* expected = "a duration (\"5m\") or a number of seconds";
  int64_t ms = 0;
  if (v->is_number()) {
    const double seconds = v->get<double>();
    if (!std::isfinite(seconds) || std::fabs(seconds) > 1e9) return TypeError("keep_alive", expected);
    ms = static_cast<int64_t>(seconds * 1000);
  } else if (v->is_string()) {
    auto parsed = ParseDurationMs(v->get<std::string>());
    if (!parsed.has_value()) return InvalidArgumentError("'keep_alive': " + parsed.error().message());
    ms = *parsed;
  } else {
    return TypeError("keep_alive", expected);
  }
  *keep_alive_ms = ms < 0 ? -1 : ms;
  return Status::Ok();
}

// "images": only an empty list is accepted.
Status RefuseImages(const json& obj, const std::string& field) {
  const json* v = Field(obj, "images");
  if (v == nullptr || (v->is_array() && v->empty())) return Status::Ok();
  return InvalidArgumentError("'" + field +
                              "' is not supported: llmd serves text only (no images)");
}

// --- options

enum class OptionUse { kGenerate, kEmbed };

// Options that only tune generation; each is honoured or accepted when it says "off".
constexpr const char* kGenerationOptions[] = {"num_predict",
                                              "temperature",
                                              "top_k",
                                              "top_p",
                                              "seed",
                                              "stop",
                                              "repeat_penalty",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "mirostat",
                                              "mirostat_tau",
                                              "mirostat_eta",
                                              "tfs_z",
                                              "typical_p",
                                              "min_p",
                                              "repeat_last_n",
                                              "penalize_newline",
                                              "num_keep"};
// Load-time switches accepted when false (what llmd does anyway).
constexpr const char* kOffSwitches[] = {"numa",       "low_vram",  "logits_all",
                                        "vocab_only", "use_mlock", "embedding_only"};
// Load-time settings, with the config key that sets them.
constexpr std::pair<const char*, const char*> kLoadTime[] = {
    {"num_batch", "batch_tokens"},
    {"num_gpu", "gpu_layers"},
    {"main_gpu", "main_device"},
    {"num_thread", "threads"},
    {"use_mmap", "use_mmap"},
    {"f16_kv", "kv_cache_type"},
    {"num_gqa", "the model file"},
    {"rope_frequency_base", "the model file"},
    {"rope_frequency_scale", "the model file"}};

template <size_t N>
bool OneOf(const std::string& key, const char* const (&list)[N]) {
  return std::any_of(std::begin(list), std::end(list), [&](const char* k) { return key == k; });
}

Status NotSupported(const std::string& field, const std::string& off) {
  return InvalidArgumentError("'" + field + "' is not supported by llmd (only " + off +
                              ", off, is accepted)");
}

Status ReadStop(const json& v, const std::string& field, std::vector<std::string>* stop) {
  const char* want = "a string or an array of up to 4 strings";
  if (v.is_string()) {
    stop->push_back(v.get<std::string>());
  } else if (v.is_array() && v.size() <= kMaxStopStrings) {
    for (const auto& s : v) {
      if (!s.is_string()) return TypeError(field, want);
      stop->push_back(s.get<std::string>());
    }
  } else {
    return TypeError(field, want);
  }
  for (const auto& s : *stop) {
    if (s.size() > kMaxStopBytes) {
      return InvalidArgumentError("each '" + field + "' string must be at most 256 bytes");
    }
  }
  return Status::Ok();
}

Status ReadGenerationOption(const std::string& key, const json& v, const std::string& field,
                            GenerationRequest* r) {
  int64_t i = 0;
  if (key == "num_predict") {  // -1 (no limit) and -2 (fill the context): up to max_new_tokens
    LLMD_RETURN_IF_ERROR(IntegerIn(v, field, -2, UINT32_MAX, &i));
    if (i >= 0) r->max_tokens = static_cast<uint32_t>(i);
    return Status::Ok();
  }
  if (key == "temperature") return NumberIn(v, field, 0, 2, &r->temperature);
  if (key == "top_p") return NumberIn(v, field, 0, 1, &r->top_p);
  if (key == "repeat_penalty") return NumberIn(v, field, 1, 10, &r->repeat_penalty);
  if (key == "presence_penalty") return NumberIn(v, field, -2, 2, &r->presence_penalty);
  if (key == "frequency_penalty") return NumberIn(v, field, -2, 2, &r->frequency_penalty);
  if (key == "top_k") {
    LLMD_RETURN_IF_ERROR(IntegerIn(v, field, 1, 1 << 20, &i));
    r->top_k = static_cast<int32_t>(i);
    return Status::Ok();
  }
  if (key == "seed") {  // any 64-bit integer, folded to the sampler's 32 bits (-1: random)
    if (!v.is_number_integer()) return TypeError(field, "an integer");
    r->seed = static_cast<uint32_t>(v.is_number_unsigned() ? v.get<uint64_t>() : v.get<int64_t>());
    return Status::Ok();
  }
  if (key == "stop") return ReadStop(v, field, &r->stop);
  // No effect: llmd never shifts the context (num_keep) and mirostat is off (tau, eta).
  if (key == "num_keep") return IntegerIn(v, field, -1, INT32_MAX, &i);
  if (key == "mirostat_tau" || key == "mirostat_eta") {
    return v.is_number() ? Status::Ok() : TypeError(field, "a number");
  }
  if (key == "mirostat") {
    if (!v.is_number() || v.get<double>() != 0) return NotSupported(field, "0");
    return Status::Ok();
  }
  if (key == "tfs_z" || key == "typical_p") {
    if (!v.is_number() || v.get<double>() != 1) return NotSupported(field, "1");
    return Status::Ok();
  }
  if (key == "min_p") {
    if (!v.is_number() || v.get<double>() != 0) return NotSupported(field, "0");
    return Status::Ok();
  }
  if (key == "repeat_last_n") {
    if (!v.is_number_integer() || v.get<int64_t>() != 64) {
      return InvalidArgumentError(
          "'" + field + "' must be 64: llmd's penalties always look at the last 64 tokens");
    }
    return Status::Ok();
  }
  // penalize_newline
  if (v != json(true)) {
    return InvalidArgumentError("'" + field +
                                "' must be true: llmd penalizes newlines like every other token");
  }
  return Status::Ok();
}

Status ReadOptions(const json& body, OptionUse use, const OllamaLimits& limits,
                   GenerationRequest* r, std::optional<int64_t>* num_ctx) {
  const json* opts = Field(body, "options");
  if (opts == nullptr) return Status::Ok();
  if (!opts->is_object()) return TypeError("options", "an object");
  for (const auto& item : opts->items()) {
    const std::string& key = item.key();
    const json& v = item.value();
    if (v.is_null()) continue;
    const std::string field = "options." + key;
    if (OneOf(key, kGenerationOptions)) {
      if (use == OptionUse::kEmbed) {
        return InvalidArgumentError("'" + field + "' does not apply to embeddings");
      }
      LLMD_RETURN_IF_ERROR(ReadGenerationOption(key, v, field, r));
      continue;
    }
    if (key == "num_ctx") {
      int64_t n = 0;
      LLMD_RETURN_IF_ERROR(IntegerIn(v, field, 1, INT32_MAX, &n));
      if (limits.context_tokens > 0 && n > limits.context_tokens) {
        return InvalidArgumentError(
            "'" + field + "' is " + std::to_string(n) + ", more than the context llmd loaded (" +
            std::to_string(limits.context_tokens) +
            " tokens, max_context_len in the config); contexts are sized when the model loads");
      }
      *num_ctx = n;
      continue;
    }
    if (OneOf(key, kOffSwitches)) {
      if (v != json(false)) {
        return InvalidArgumentError("'" + field +
                                    "' is not supported by llmd (only false is accepted)");
      }
      continue;
    }
    auto load = std::find_if(std::begin(kLoadTime), std::end(kLoadTime),
                             [&](const auto& p) { return key == p.first; });
    if (load != std::end(kLoadTime)) {
      return InvalidArgumentError("'" + field + "' is set when llmd loads the model (" +
                                  load->second + "), not per request");
    }
    return InvalidArgumentError("'" + field + "' is not an option llmd knows");
  }
  return Status::Ok();
}

// --- generation fields shared by chat and generate

// format: "json" (any JSON object) or a JSON schema object; "" is none.
Status ReadFormat(const json& body, GenerationRequest* r) {
  const json* f = Field(body, "format");
  if (f == nullptr) return Status::Ok();
  if (f->is_string()) {
    const std::string s = f->get<std::string>();
    if (s.empty()) return Status::Ok();
    if (s != "json") {
      return InvalidArgumentError("'format' must be \"json\" or a JSON schema object (got \"" + s +
                                  "\")");
    }
    r->format.json_schema = R"({"type":"object"})";
    return Status::Ok();
  }
  if (!f->is_object()) return TypeError("format", "\"json\" or a JSON schema object");
  r->format.json_schema = f->dump();
  return Status::Ok();
}

// think: true / false, or a level ("low", "medium", "high": on; llmd has no graded effort).
Status ReadThink(const json& body, GenerationRequest* r) {
  const json* t = Field(body, "think");
  if (t == nullptr) return Status::Ok();
  if (t->is_boolean()) {
    r->enable_thinking = t->get<bool>();
  } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
    r->enable_thinking = true;
  } else {
    return TypeError("think", "true, false, \"low\", \"medium\" or \"high\"");
  }
  return Status::Ok();
}

Status ReadLogprobs(const json& body, GenerationRequest* r) {
  bool logprobs = false;
  LLMD_RETURN_IF_ERROR(ReadBool(body, "logprobs", &logprobs));
  int64_t top = 0;
  const json* t = Field(body, "top_logprobs");
  if (t != nullptr) LLMD_RETURN_IF_ERROR(IntegerIn(*t, "top_logprobs", 0, kMaxTopLogprobs, &top));
  if (t != nullptr && top > 0 && !logprobs) {
    return InvalidArgumentError("'top_logprobs' needs 'logprobs': true");
  }
  if (logprobs) r->top_logprobs = static_cast<int32_t>(top);
  return Status::Ok();
}

// Ollama's context switches. truncate: the oldest messages dropped to fit (drop_oldest) or
// not; absent, llmd refuses a prompt too long (overflow_fields.h says why). shift: Ollama
// slides the context when the reply fills it; llmd never does (the reply ends with
// done_reason "length"), which is shift:false, so only that is accepted.
Status ReadContextSwitches(const json& body, GenerationRequest* r) {
  LLMD_ASSIGN_OR_RETURN(r->overflow, OllamaTruncateField(body));
  std::optional<bool> shift;
  LLMD_RETURN_IF_ERROR(ReadBool(body, "shift", &shift));
  if (shift.value_or(false)) {
    return InvalidArgumentError("'shift': true is not supported: llmd never shifts the context; a reply that fills it "
                                "ends with done_reason \"length\" (send shift:false, or leave it out)");
  }
  return Status::Ok();
}

Status ReadCommon(const json& body, const OllamaLimits& limits, OllamaGenerateRequest* out) {
  GenerationRequest& r = out->gen;
  LLMD_RETURN_IF_ERROR(ReadModel(body, &r.model));
  LLMD_RETURN_IF_ERROR(ReadContextSwitches(body, &r));
  r.stream = true;  // Ollama's default
  LLMD_RETURN_IF_ERROR(ReadBool(body, "stream", &r.stream));
  LLMD_RETURN_IF_ERROR(ReadKeepAlive(body, &out->keep_alive_ms));
  LLMD_RETURN_IF_ERROR(ReadLogprobs(body, &r));
  LLMD_RETURN_IF_ERROR(ReadOptions(body, OptionUse::kGenerate, limits, &r, &out->num_ctx));
  r.context_tokens = out->num_ctx;  // the request's own context, up to the model's
  return Status::Ok();
}

// A call's arguments: an object, as Ollama sends them (absent: none, "{}").
Result<std::string> ArgumentsObject(const json* value, const std::string& field) {
  if (value == nullptr) return std::string("{}");
  if (!value->is_object()) return TypeError(field, "an object (Ollama's arguments are JSON, not text)");
  return value->dump();
}

// The id of the call a tool message answers: the one it names, else the first unanswered call
// of its tool_name, else the first unanswered call (Ollama's clients send results in call
// order, often without ids). `open` holds the id and name of each call not answered yet.
std::string AnsweredCall(std::string id, const std::string& name,
                         std::vector<std::pair<std::string, std::string>>* open) {
  auto it = std::find_if(open->begin(), open->end(), [&](const auto& c) {
    return id.empty() ? (name.empty() || c.second == name) : c.first == id;
  });
  if (it == open->end() && id.empty() && !open->empty()) it = open->begin();
  if (it == open->end()) return id;  // answers nothing open: ValidateConversation says so
  id = it->first;
  open->erase(it);
  return id;
}

// The messages as sent; roles, calls and results are checked with the tools, by
// ValidateConversation, as on every API.
Status ReadMessages(const json& body, OllamaGenerateRequest* out) {
  const json* messages = Field(body, "messages");
  if (messages != nullptr && !messages->is_array()) return TypeError("messages", "an array");
  if (messages == nullptr || messages->empty()) {
    out->load_only = true;
    return Status::Ok();
  }
  size_t next_id = 0;
  std::vector<std::pair<std::string, std::string>> open;  // id, name of calls not yet answered
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    LLMD_ASSIGN_OR_RETURN(chat::Message msg, MessageWithRole(m, field));
    if (const json* c = Field(m, "content")) {
      if (!c->is_string()) return TypeError(field + ".content", "a string");
      msg.content = c->get<std::string>();
    }
    LLMD_RETURN_IF_ERROR(RefuseImages(m, field + ".images"));
    // An earlier turn's reasoning: accepted and dropped (templates leave it out).
    if (const json* t = Field(m, "thinking"); t != nullptr && !t->is_string()) {
      return TypeError(field + ".thinking", "a string");
    }
    LLMD_ASSIGN_OR_RETURN(msg.tool_calls, ReadChatToolCalls(m, field, ArgumentsObject));
    for (auto& call : msg.tool_calls) {
      // Ollama's calls carry no ids: the conversation's own numbering links the answers.
      if (call.id.empty()) call.id = "call_" + std::to_string(next_id++);
      open.emplace_back(call.id, call.name);
    }
    if (msg.role == "tool") {
      std::string id, name;
      for (auto [key, dst] : {std::pair{"tool_call_id", &id}, std::pair{"tool_name", &name}}) {
        const json* v = Field(m, key);
        if (v != nullptr && !v->is_string()) return TypeError(field + "." + key, "a string");
        if (v != nullptr) *dst = v->get<std::string>();
      }
      msg.tool_call_id = AnsweredCall(std::move(id), name, &open);
    }
    out->gen.messages.push_back(std::move(msg));
  }
  return Status::Ok();
}

// tools: [{type?:"function", function:{name, description?, parameters?}}] (a missing type is
// "function", as Ollama's clients leave it out), then the conversation checked against them.
// Ollama has no tool_choice: the model decides whether to call.
Status ReadTools(const json& body, GenerationRequest* r) {
  auto read_one = [](const json& tool, const std::string& field) {
    return ReadFunctionTool(tool, field, /*type_required=*/false);
  };
  LLMD_ASSIGN_OR_RETURN(std::vector<ToolSpec> tools, ReadToolList(body, read_one));
  LLMD_RETURN_IF_ERROR(ValidateConversation(r->messages, tools, ToolChoice{}, ChatDialect{}));
  ApplyTools(tools, ToolChoice{}, &r->format);
  return Status::Ok();
}

// Refuses a generate field llmd cannot honour unless it is empty.
Status RefuseUnlessEmpty(const json& body, const char* key, const std::string& why) {
  const json* v = Field(body, key);
  if (v == nullptr) return Status::Ok();
  if ((v->is_string() && v->get<std::string>().empty()) || (v->is_array() && v->empty())) {
    return Status::Ok();
  }
  return InvalidArgumentError("'" + std::string(key) + "' is not supported: " + why);
}


}  // namespace

Result<OllamaGenerateRequest> ParseOllamaChat(std::string_view body, const OllamaLimits& limits) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  OllamaGenerateRequest out;
  out.gen.chat = true;
  LLMD_RETURN_IF_ERROR(ReadMessages(j, &out));
  LLMD_RETURN_IF_ERROR(ReadTools(j, &out.gen));
  LLMD_RETURN_IF_ERROR(ReadFormat(j, &out.gen));
  LLMD_RETURN_IF_ERROR(ReadThink(j, &out.gen));
  LLMD_RETURN_IF_ERROR(ReadCommon(j, limits, &out));
  return out;
}

Result<OllamaGenerateRequest> ParseOllamaGenerate(std::string_view body,
                                                  const OllamaLimits& limits) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  OllamaGenerateRequest out;
  GenerationRequest& r = out.gen;
  std::string prompt, system;
  LLMD_RETURN_IF_ERROR(ReadString(j, "prompt", &prompt));
  LLMD_RETURN_IF_ERROR(ReadString(j, "system", &system));
  LLMD_RETURN_IF_ERROR(ReadBool(j, "raw", &out.raw));
  LLMD_RETURN_IF_ERROR(RefuseImages(j, "images"));
  LLMD_RETURN_IF_ERROR(RefuseUnlessEmpty(j, "suffix", "llmd does not fill in the middle"));
  LLMD_RETURN_IF_ERROR(RefuseUnlessEmpty(j, "template",
                                         "llmd applies the model's own chat template (send "
                                         "raw:true with a prompt already templated)"));
  LLMD_RETURN_IF_ERROR(RefuseUnlessEmpty(
      j, "context",
      "llmd keeps no context between requests; send the whole conversation to /api/chat"));
  for (const char* image_field : {"width", "height", "steps"}) {
    if (Field(j, image_field) != nullptr) {
      return InvalidArgumentError("'" + std::string(image_field) +
                                  "' is for image generation, which llmd does not do");
    }
  }
  LLMD_RETURN_IF_ERROR(ReadFormat(j, &r));
  LLMD_RETURN_IF_ERROR(ReadThink(j, &r));
  LLMD_RETURN_IF_ERROR(ReadCommon(j, limits, &out));
  if (out.raw) {
    // No template: nothing to put a system prompt, a schema or a thinking switch into.
    if (!system.empty()) {
      return InvalidArgumentError(
          "'system' cannot be combined with raw:true (no template is applied)");
    }
    if (!r.format.json_schema.empty()) {
      return InvalidArgumentError(
          "'format' cannot be combined with raw:true (it needs the chat template)");
    }
    if (r.enable_thinking) {
      return InvalidArgumentError(
          "'think' cannot be combined with raw:true (it needs the chat template)");
    }
    r.enable_thinking.reset();
  }
  out.load_only = prompt.empty();
  if (out.raw) {
    r.chat = false;
    r.prompt = std::move(prompt);
  } else {
    r.chat = true;
    if (!system.empty()) r.messages.push_back({"system", std::move(system)});
    r.messages.push_back({"user", std::move(prompt)});
  }
  return out;
}

namespace {

Status ReadEmbedCommon(const json& j, const OllamaLimits& limits, OllamaEmbedRequest* r) {
  LLMD_RETURN_IF_ERROR(ReadModel(j, &r->model));
  LLMD_RETURN_IF_ERROR(ReadKeepAlive(j, &r->keep_alive_ms));
  GenerationRequest unused;  // the generation options are refused for embeddings
  return ReadOptions(j, OptionUse::kEmbed, limits, &unused, &r->num_ctx);
}

Status CheckEmbedInputs(const std::vector<std::string>& inputs, const char* field) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string at = inputs.size() == 1 ? std::string(field)
                                              : std::string(field) + "[" + std::to_string(i) + "]";
    if (inputs[i].empty()) return InvalidArgumentError("'" + at + "' is empty");
    if (!IsValidUtf8(inputs[i])) return InvalidArgumentError("'" + at + "' is not valid UTF-8");
  }
  return Status::Ok();
}

}  // namespace

Result<OllamaEmbedRequest> ParseOllamaEmbed(std::string_view body, const OllamaLimits& limits) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  OllamaEmbedRequest r;
  if (const json* input = Field(j, "input")) {
    if (input->is_string()) {
      if (!input->get<std::string>().empty()) r.inputs.push_back(input->get<std::string>());
    } else if (input->is_array() && input->size() <= kMaxEmbeddingInputs) {
      for (const json& item : *input) {
        if (!item.is_string()) return TypeError("input", "a string or an array of strings");
        r.inputs.push_back(item.get<std::string>());
      }
    } else {
      return TypeError("input", "a string or an array of up to 256 strings");
    }
  }
  LLMD_RETURN_IF_ERROR(CheckEmbedInputs(r.inputs, "input"));
  LLMD_RETURN_IF_ERROR(ReadBool(j, "truncate", &r.truncate));
  if (const json* d = Field(j, "dimensions")) {
    int64_t dims = 0;
    LLMD_RETURN_IF_ERROR(IntegerIn(*d, "dimensions", 1, INT32_MAX, &dims));
    r.dimensions = dims;
  }
  LLMD_RETURN_IF_ERROR(ReadEmbedCommon(j, limits, &r));
  return r;
}

Result<OllamaEmbedRequest> ParseOllamaEmbeddings(std::string_view body,
                                                 const OllamaLimits& limits) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  OllamaEmbedRequest r;
  std::string prompt;
  LLMD_RETURN_IF_ERROR(ReadString(j, "prompt", &prompt));
  if (!prompt.empty()) r.inputs.push_back(std::move(prompt));
  LLMD_RETURN_IF_ERROR(CheckEmbedInputs(r.inputs, "prompt"));
  LLMD_RETURN_IF_ERROR(ReadEmbedCommon(j, limits, &r));
  return r;
}

Result<OllamaShowRequest> ParseOllamaShow(std::string_view body) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  OllamaShowRequest r;
  LLMD_RETURN_IF_ERROR(ReadString(j, "model", &r.model));
  if (r.model.empty()) LLMD_RETURN_IF_ERROR(ReadString(j, "name", &r.model));  // the older field
  if (r.model.empty()) return InvalidArgumentError("'model' is required");
  LLMD_RETURN_IF_ERROR(ReadBool(j, "verbose", &r.verbose));
  return r;
}

}  // namespace llmd::http
