#include "http/request_class_fields.h"
#include "http/openai/openai_request.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "http/chat_json.h"
#include "http/chat_surface.h"
#include "http/overflow_fields.h"
#include "http/json_fields.h"

namespace llmd::http {
namespace {

using nlohmann::json;

// Refuses a parameter llmd cannot honour when it asks for more than the default.
Status Unsupported(const json& obj, const char* key, const json& harmless) {
  const json* v = Field(obj, key);
  if (v == nullptr || *v == harmless) return Status::Ok();
  return InvalidArgumentError("'" + std::string(key) + "' is not supported by llmd");
}

Status ReadLogitBias(const json& body, GenerationRequest* r);

// llama-server's own sampling fields, which its clients send (Open WebUI sends min_p, say).
// llmd has none of these samplers, so each is accepted only at the value that switches it off,
// and refused otherwise, never ignored.
struct NeutralValue {
  const char* key;
  json off;
  const char* why;  // what to use instead, or empty
};

Status RefuseActiveExtensions(const json& body) {
  static const NeutralValue kNeutral[] = {
      {"min_p", 0, ""},
      {"typical_p", 1, ""},
      {"tfs_z", 1, ""},
      {"mirostat", 0, ""},
      {"dynatemp_range", 0, ""},
      {"dry_multiplier", 0, ""},
      {"xtc_probability", 0, ""},
      {"top_n_sigma", -1, ""},
      {"n_probs", 0, "; use logprobs and top_logprobs"},
      {"repeat_last_n", 64, ": llmd's penalties always look at the last 64 tokens"},
      {"cache_prompt", true, ": llmd always reuses cached prompt prefixes"},
      {"grammar", "", "; use response_format or tools"},
      {"json_schema", json(), "; use response_format"},
      {"samplers", json(), ": llmd's sampler order is fixed"},
      {"n_predict", json(), "; use max_tokens"},
  };
  for (const auto& n : kNeutral) {
    const json* v = Field(body, n.key);
    if (v == nullptr || v->is_null()) continue;
    const bool off = v->is_number() && n.off.is_number() ? v->get<double>() == n.off.get<double>() : *v == n.off;
    if (off) continue;
    std::string msg = "'" + std::string(n.key) + "' is not supported by llmd";
    if (!n.off.is_null()) msg += " (only " + n.off.dump() + ", off, is accepted)";
    return InvalidArgumentError(msg + n.why);
  }
  // No effect while mirostat is off, in llama-server as here.
  for (const char* key : {"mirostat_tau", "mirostat_eta"}) {
    if (const json* v = Field(body, key); v != nullptr && !v->is_number()) return TypeError(key, "a number");
  }
  return Status::Ok();
}

// llama-server's per-request speculative decoding fields, keys with a dot in them as it spells
// them. n_max caps the server's draft_max; n_min and p_min have no per-request counterpart in
// llmd, so they are refused rather than dropped.
Status ReadSpeculative(const json& body, GenerationRequest* r) {
  std::optional<int64_t> n_max;
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "speculative.n_max", 0, UINT32_MAX, &n_max));
  if (n_max) r->draft_max = static_cast<uint32_t>(*n_max);
  for (const auto& [key, server_key] : {std::pair{"speculative.n_min", "draft_min"}, std::pair{"speculative.p_min", "draft_p_min"}}) {
    if (Field(body, key) != nullptr) {
      return InvalidArgumentError("'" + std::string(key) + "' is not supported per request by llmd: the server's " +
                                  server_key + " applies to every request (docs/config.md)");
    }
  }
  return Status::Ok();
}

Status ReadCommon(const json& body, GenerationRequest* r) {
  LLMD_RETURN_IF_ERROR(RefuseActiveExtensions(body));
  LLMD_ASSIGN_OR_RETURN(r->request_class, OpenAiRequestClass(body));
  LLMD_RETURN_IF_ERROR(ReadSpeculative(body, r));
  if (const json* m = Field(body, "model")) {
    if (!m->is_string()) return TypeError("model", "a string");
    r->model = m->get<std::string>();
  }
  std::optional<int64_t> i;
  // 0 is allowed: an empty answer with finish_reason "length" (robustness item 34).
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "max_tokens", 0, UINT32_MAX, &i));
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "max_completion_tokens", 0, UINT32_MAX, &i));
  if (i) r->max_tokens = static_cast<uint32_t>(*i);
  i.reset();
  if (const json* seed = Field(body, "seed")) {  // any 64-bit integer, folded to the sampler's 32 bits
    if (!seed->is_number_integer()) return TypeError("seed", "an integer");
    r->seed = static_cast<uint32_t>(seed->is_number_unsigned() ? seed->get<uint64_t>() : seed->get<int64_t>());
  }
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "top_k", 1, 1 << 20, &i));
  if (i) r->top_k = static_cast<int32_t>(*i);
  i.reset();
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "temperature", 0, 2, &r->temperature));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "top_p", 0, 1, &r->top_p));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "repeat_penalty", 1, 10, &r->repeat_penalty));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "presence_penalty", -2, 2, &r->presence_penalty));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "frequency_penalty", -2, 2, &r->frequency_penalty));
  LLMD_RETURN_IF_ERROR(ReadBool(body, "stream", &r->stream));
  LLMD_RETURN_IF_ERROR(ReadBool(body, "ignore_eos", &r->ignore_eos));
  // llmd's extension, spelled as the Responses API spells it: "auto" drops a chat's oldest
  // whole turns when it does not fit the context; "disabled" refuses it.
  LLMD_ASSIGN_OR_RETURN(r->overflow, TruncationField(body));
  if (const json* so = Field(body, "stream_options")) {
    if (!so->is_object()) return TypeError("stream_options", "an object");
    LLMD_RETURN_IF_ERROR(ReadBool(*so, "include_usage", &r->include_usage));
  }
  if (const json* stop = Field(body, "stop")) {
    if (stop->is_string()) {
      r->stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= kMaxStopStrings) {
      for (const auto& s : *stop) {
        if (!s.is_string()) return TypeError("stop", "a string or an array of up to 4 strings");
        r->stop.push_back(s.get<std::string>());
      }
    } else {
      return TypeError("stop", "a string or an array of up to 4 strings");
    }
    for (const auto& s : r->stop) {
      if (s.size() > kMaxStopBytes) return InvalidArgumentError("each 'stop' string must be at most 256 bytes");
    }
  }
  LLMD_RETURN_IF_ERROR(ReadInteger(body, "n", 1, kMaxChoices, &i));
  if (i) r->n = static_cast<uint32_t>(*i);
  i.reset();
  LLMD_RETURN_IF_ERROR(Unsupported(body, "best_of", 1));
  LLMD_RETURN_IF_ERROR(ReadLogitBias(body, r));
  return Status::Ok();
}

// logit_bias: {"token id": bias}, ids as decimal strings, biases in -100..100.
Status ReadLogitBias(const json& body, GenerationRequest* r) {
  const json* bias = Field(body, "logit_bias");
  if (bias == nullptr) return Status::Ok();
  if (!bias->is_object()) return TypeError("logit_bias", "an object of token id to bias");
  if (bias->size() > kMaxLogitBias) return InvalidArgumentError("'logit_bias' has more than 1024 entries");
  for (const auto& [key, value] : bias->items()) {
    char* end = nullptr;
    errno = 0;
    const long id = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0 || id < 0 || id > INT32_MAX) {
      return InvalidArgumentError("'logit_bias' keys must be token ids (got '" + key + "')");
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 ||
        value.get<double>() > 100) {
      return InvalidArgumentError("'logit_bias' values must be numbers in -100..100");
    }
    r->logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
  return Status::Ok();
}

// A message's content: a string, or an array of {"type":"text","text":...} parts.
Result<std::string> Content(const json& msg, size_t index) {
  const std::string field = "messages[" + std::to_string(index) + "].content";
  const json* c = Field(msg, "content");
  if (c == nullptr) return std::string();
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) return TypeError(field, "a string or an array of text parts");
  std::string text;
  for (const auto& part : *c) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return InvalidArgumentError(field + " parts must be {\"type\":\"text\",\"text\":...}; llmd serves text only");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// A call's arguments: a string of JSON (absent: none).
Result<std::string> ArgumentsText(const json* value, const std::string& field) {
  if (value == nullptr) return std::string();
  if (!value->is_string()) return TypeError(field, "a string of JSON");
  return value->get<std::string>();
}

// The messages as sent; roles, calls and results are checked with the tools, by
// ValidateConversation, as on every API.
Status ReadMessages(const json& j, GenerationRequest* r) {
  const json* messages = Field(j, "messages");
  if (messages == nullptr) return InvalidArgumentError("'messages' is required");
  if (!messages->is_array() || messages->empty()) return TypeError("messages", "a non-empty array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    LLMD_ASSIGN_OR_RETURN(chat::Message msg, MessageWithRole(m, field));
    if (msg.role == "developer") msg.role = "system";
    LLMD_ASSIGN_OR_RETURN(msg.content, Content(m, i));
    // What a chat template has no place for is refused, not dropped.
    for (const char* key : {"refusal", "audio", "function_call"}) {
      if (Field(m, key) != nullptr) {
        return InvalidArgumentError(field + "." + key + " is not supported by llmd (send the text as content, calls as tool_calls)");
      }
    }
    if (const json* name = Field(m, "name"); name != nullptr && msg.role != "tool") {
      return InvalidArgumentError(field + ".name is not supported by llmd (the chat template has no place for it)");
    }
    LLMD_ASSIGN_OR_RETURN(msg.tool_calls, ReadChatToolCalls(m, field, ArgumentsText));
    if (msg.role == "tool") {
      const json* id = Field(m, "tool_call_id");
      if (id == nullptr || !id->is_string()) return TypeError(field + ".tool_call_id", "a string (the call answered)");
      msg.tool_call_id = id->get<std::string>();
    }
    r->messages.push_back(std::move(msg));
  }
  return Status::Ok();
}

// tool_choice: auto, none, required or {type:"function", function:{name}}.
Result<ToolChoice> ReadToolChoice(const json& j) {
  ToolChoice choice;
  const json* c = Field(j, "tool_choice");
  if (c == nullptr) return choice;
  if (c->is_string()) {
    if (*c == "auto") return choice;
    if (*c == "none" || *c == "required") {
      choice.mode = *c == "none" ? engine::ToolChoice::kNone : engine::ToolChoice::kRequired;
      return choice;
    }
  } else if (c->is_object() && c->value("type", json()) == "function" && c->contains("function") &&
             (*c)["function"].is_object() && (*c)["function"].value("name", json()).is_string()) {
    choice.mode = engine::ToolChoice::kNamed;
    choice.name = (*c)["function"]["name"].get<std::string>();
    return choice;
  }
  return InvalidArgumentError(
      "'tool_choice' must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}");
}

// tools, tool_choice and parallel_tool_calls, then the conversation checked against them.
Status ReadTools(const json& j, GenerationRequest* r) {
  auto read_one = [](const json& tool, const std::string& field) {
    return ReadFunctionTool(tool, field, /*type_required=*/true);
  };
  LLMD_ASSIGN_OR_RETURN(std::vector<ToolSpec> tools, ReadToolList(j, read_one));
  LLMD_ASSIGN_OR_RETURN(ToolChoice choice, ReadToolChoice(j));
  static const ChatDialect kChat{.roles = "system, developer, user, assistant or tool"};
  LLMD_RETURN_IF_ERROR(ValidateConversation(r->messages, tools, choice, kChat));
  ApplyTools(tools, choice, &r->format);
  return ReadBool(j, "parallel_tool_calls", &r->format.parallel_tool_calls);
}

// response_format: text, json_object (any JSON object) or json_schema {name, schema, strict}.
Status ReadResponseFormat(const json& j, GenerationRequest* r) {
  const json* rf = Field(j, "response_format");
  if (rf == nullptr) return Status::Ok();
  if (!rf->is_object() || !rf->value("type", json()).is_string()) {
    return TypeError("response_format", "{\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
  }
  const std::string type = (*rf)["type"].get<std::string>();
  if (type == "text") return Status::Ok();
  if (type == "json_object") {
    r->format.json_schema = R"({"type":"object"})";
    return Status::Ok();
  }
  if (type != "json_schema") {
    return InvalidArgumentError("'response_format.type' must be text, json_object or json_schema (got '" + type + "')");
  }
  const json* js = Field(*rf, "json_schema");
  if (js == nullptr || !js->is_object()) return TypeError("response_format.json_schema", "an object");
  const json* schema = Field(*js, "schema");
  // strict or not, the schema is enforced by the grammar: a reply that does not follow it
  // cannot be generated.
  bool strict = false;
  LLMD_RETURN_IF_ERROR(ReadBool(*js, "strict", &strict));
  if (schema == nullptr) {
    r->format.json_schema = R"({"type":"object"})";
    return Status::Ok();
  }
  if (!schema->is_object()) return TypeError("response_format.json_schema.schema", "a JSON schema object");
  r->format.json_schema = schema->dump();
  return Status::Ok();
}

// Thinking: chat_template_kwargs.enable_thinking, or reasoning_effort (none/minimal: off).
Status ReadThinking(const json& j, GenerationRequest* r) {
  if (const json* effort = Field(j, "reasoning_effort")) {
    if (!effort->is_string()) return TypeError("reasoning_effort", "a string");
    const std::string e = effort->get<std::string>();
    if (e == "none" || e == "minimal") r->enable_thinking = false;
    else if (e == "low" || e == "medium" || e == "high" || e == "xhigh") r->enable_thinking = true;
    else return InvalidArgumentError("'reasoning_effort' must be none, minimal, low, medium, high or xhigh");
  }
  if (const json* kw = Field(j, "chat_template_kwargs")) {
    if (!kw->is_object()) return TypeError("chat_template_kwargs", "an object");
    for (const auto& [key, value] : kw->items()) {
      if (key != "enable_thinking") {
        return InvalidArgumentError("'chat_template_kwargs." + key + "' is not supported (only enable_thinking)");
      }
    }
    bool on = false;
    if (Field(*kw, "enable_thinking") != nullptr) {
      LLMD_RETURN_IF_ERROR(ReadBool(*kw, "enable_thinking", &on));
      r->enable_thinking = on;
    }
  }
  return Status::Ok();
}

// Chat logprobs: logprobs (bool) and top_logprobs (0..20, needs logprobs).
Status ReadChatLogprobs(const json& j, GenerationRequest* r) {
  bool logprobs = false;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "logprobs", &logprobs));
  std::optional<int64_t> top;
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "top_logprobs", 0, kMaxTopLogprobs, &top));
  if (top && !logprobs) return InvalidArgumentError("'top_logprobs' needs 'logprobs': true");
  if (logprobs) r->top_logprobs = static_cast<int32_t>(top.value_or(0));
  return Status::Ok();
}

}  // namespace

Result<GenerationRequest> ParseChatRequest(std::string_view body) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  GenerationRequest r;
  r.chat = true;
  LLMD_RETURN_IF_ERROR(ReadMessages(j, &r));
  LLMD_RETURN_IF_ERROR(ReadTools(j, &r));
  LLMD_RETURN_IF_ERROR(ReadThinking(j, &r));
  LLMD_RETURN_IF_ERROR(ReadResponseFormat(j, &r));
  LLMD_RETURN_IF_ERROR(ReadChatLogprobs(j, &r));
  LLMD_RETURN_IF_ERROR(Unsupported(j, "audio", json()));
  // The deprecated function-calling fields and hosted tools: refused rather than ignored.
  LLMD_RETURN_IF_ERROR(Unsupported(j, "functions", json()));
  LLMD_RETURN_IF_ERROR(Unsupported(j, "function_call", json()));
  LLMD_RETURN_IF_ERROR(Unsupported(j, "web_search_options", json()));
  LLMD_RETURN_IF_ERROR(Unsupported(j, "store", false));  // nothing is stored
  if (const json* v = Field(j, "verbosity"); v != nullptr && *v != "medium") {
    return InvalidArgumentError("'verbosity' other than medium is not supported by llmd");
  }
  LLMD_RETURN_IF_ERROR(Unsupported(j, "prediction", json()));
  if (const json* modalities = Field(j, "modalities");
      modalities != nullptr && *modalities != json::array({"text"})) {
    return InvalidArgumentError("'modalities' other than [\"text\"] is not supported by llmd");
  }
  LLMD_RETURN_IF_ERROR(ReadCommon(j, &r));
  return r;
}

Result<GenerationRequest> ParseCompletionRequest(std::string_view body) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  GenerationRequest r;
  r.chat = false;
  const json* prompt = Field(j, "prompt");
  if (prompt == nullptr) return InvalidArgumentError("'prompt' is required");
  if (prompt->is_string()) {
    r.prompt = prompt->get<std::string>();
  } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    r.prompt = (*prompt)[0].get<std::string>();
  } else {
    return TypeError("prompt", "a string (or an array of one string)");
  }
  if (r.prompt.empty()) return InvalidArgumentError("'prompt' is empty");
  LLMD_RETURN_IF_ERROR(Unsupported(j, "echo", false));
  LLMD_RETURN_IF_ERROR(Unsupported(j, "suffix", ""));
  std::optional<int64_t> logprobs;  // the legacy API's: an integer 0..5
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "logprobs", 0, 5, &logprobs));
  if (logprobs) r.top_logprobs = static_cast<int32_t>(*logprobs);
  LLMD_RETURN_IF_ERROR(ReadCommon(j, &r));
  if (!r.max_tokens) r.max_tokens = 16;  // OpenAI's default for completions
  return r;
}

}  // namespace llmd::http
