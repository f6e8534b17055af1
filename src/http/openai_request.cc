#include "http/openai_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace llmd::http {
namespace {

using nlohmann::json;

Status TypeError(const std::string& field, const char* want) {
  return InvalidArgumentError("'" + field + "' must be " + want);
}

// The field's value, or nullptr when absent or null.
const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status ReadBool(const json& obj, const char* key, bool* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_boolean()) return TypeError(key, "true or false");
  *out = v->get<bool>();
  return Status::Ok();
}

Status ReadNumber(const json& obj, const char* key, double lo, double hi, std::optional<float>* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number()) return TypeError(key, "a number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return InvalidArgumentError("'" + std::string(key) + "' must be in " + json(lo).dump() + ".." + json(hi).dump());
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status ReadInteger(const json& obj, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number_integer()) return TypeError(key, "an integer");
  if (v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(hi) : false) {
    return InvalidArgumentError("'" + std::string(key) + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi) {
    return InvalidArgumentError("'" + std::string(key) + "' must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = i;
  return Status::Ok();
}

// Refuses a parameter llmd cannot honour when it asks for more than the default.
Status Unsupported(const json& obj, const char* key, const json& harmless) {
  const json* v = Field(obj, key);
  if (v == nullptr || *v == harmless) return Status::Ok();
  return InvalidArgumentError("'" + std::string(key) + "' is not supported by llmd");
}

Status ReadCommon(const json& body, GenerationRequest* r) {
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
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "temperature", 0, 2, &r->temperature));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "top_p", 0, 1, &r->top_p));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "repeat_penalty", 1, 10, &r->repeat_penalty));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "presence_penalty", -2, 2, &r->presence_penalty));
  LLMD_RETURN_IF_ERROR(ReadNumber(body, "frequency_penalty", -2, 2, &r->frequency_penalty));
  LLMD_RETURN_IF_ERROR(ReadBool(body, "stream", &r->stream));
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
  LLMD_RETURN_IF_ERROR(Unsupported(body, "n", 1));
  LLMD_RETURN_IF_ERROR(Unsupported(body, "best_of", 1));
  LLMD_RETURN_IF_ERROR(Unsupported(body, "logprobs", false));
  LLMD_RETURN_IF_ERROR(Unsupported(body, "top_logprobs", 0));
  return Status::Ok();
}

Result<json> ParseObject(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgumentError("the request body must be a JSON object");
  return j;
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

}  // namespace

Result<GenerationRequest> ParseChatRequest(std::string_view body) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  GenerationRequest r;
  r.chat = true;
  const json* messages = Field(j, "messages");
  if (messages == nullptr) return InvalidArgumentError("'messages' is required");
  if (!messages->is_array() || messages->empty()) return TypeError("messages", "a non-empty array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return TypeError(field, "an object");
    const json* role = Field(m, "role");
    if (role == nullptr || !role->is_string()) return TypeError(field + ".role", "a string");
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";
    if (name != "system" && name != "user" && name != "assistant") {
      return InvalidArgumentError(field + ".role must be system, developer, user or assistant (got '" + name + "')");
    }
    LLMD_ASSIGN_OR_RETURN(std::string content, Content(m, i));
    r.messages.push_back({std::move(name), std::move(content)});
  }
  if (r.messages.back().role == "assistant") {
    return InvalidArgumentError("the last message must not be the assistant's (llmd does not continue a reply)");
  }
  if (const json* kw = Field(j, "chat_template_kwargs")) {
    if (!kw->is_object()) return TypeError("chat_template_kwargs", "an object");
    LLMD_RETURN_IF_ERROR(ReadBool(*kw, "enable_thinking", &r.enable_thinking));
  }
  if (const json* tools = Field(j, "tools"); tools != nullptr && !(tools->is_array() && tools->empty())) {
    return InvalidArgumentError("'tools' is not supported by llmd");
  }
  if (const json* rf = Field(j, "response_format")) {
    if (!rf->is_object() || rf->value("type", json("text")) != "text") {
      return InvalidArgumentError("'response_format' other than {\"type\":\"text\"} is not supported by llmd");
    }
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
  LLMD_RETURN_IF_ERROR(ReadCommon(j, &r));
  if (!r.max_tokens) r.max_tokens = 16;  // OpenAI's default for completions
  return r;
}

}  // namespace llmd::http
