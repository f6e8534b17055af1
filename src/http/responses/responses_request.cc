// The Responses API's request side: ParseResponsesRequest and its field readers (the
// replies and the event stream are in responses_api.cc).
#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "http/request_class_fields.h"
#include "http/api_text.h"
#include "http/chat_json.h"
#include "http/chat_surface.h"
#include "http/json_fields.h"
#include "http/overflow_fields.h"
#include "http/responses/responses_api.h"

namespace llmd::http {
namespace {

using nlohmann::json;
// What we echo back keeps OpenAI's field order, for people reading it.
using ordered = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------
// Reading the request (the field readers are json_fields.h).

// State llmd keeps is stored responses (ReadStorage); what would need more is refused, with
// what to send instead.
Status RefuseStatefulFields(const json& j) {
  // OpenAI's Conversations API is objects of their own, created and edited through
  // /v1/conversations, which llmd does not serve; previous_response_id chains responses.
  if (Field(j, "conversation") != nullptr) {
    return InvalidArgumentError("'conversation' is not supported: llmd has no Conversations API; "
                                "chain responses with previous_response_id, or send the whole input");
  }
  if (Field(j, "prompt") != nullptr) {
    return InvalidArgumentError("'prompt' (a stored prompt template) is not supported: llmd keeps no prompts; "
                                "send instructions and input");
  }
  std::optional<bool> background;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "background", &background));
  if (background.value_or(false)) {
    return InvalidArgumentError("'background': true is not supported: llmd answers within the request "
                                "(use stream:true for a long answer)");
  }
  return Status::Ok();
}

// truncation: "auto" drops the oldest whole turns (after the instructions) when the input
// does not fit the context, and the usage says how many; "disabled" (the default) refuses it.
Status ReadTruncation(const json& j, ResponsesRequest* r, ordered* echo) {
  LLMD_ASSIGN_OR_RETURN(r->overflow, TruncationField(j));
  // "disabled" is what a Response says by default.
  if (r->overflow == engine::ContextOverflow::kDropOldest) (*echo)["truncation"] = "auto";
  return Status::Ok();
}

// Options that would change the answer in ways llmd cannot do.
Status RefuseUnhonourable(const json& j) {
  if (const json* cm = Field(j, "context_management"); cm != nullptr && !(cm->is_array() && cm->empty())) {
    return InvalidArgumentError("'context_management' is not supported by llmd (it does not compact input)");
  }
  if (Field(j, "moderation") != nullptr) {
    return InvalidArgumentError("'moderation' is not supported by llmd (its guard model is set in its config)");
  }
  return Status::Ok();
}

// Text parts: input_text and output_text (a replayed assistant message); no media.
Result<std::string> PartsText(const json& parts, const std::string& field) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    const json& part = parts[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    if (!part.is_object()) return TypeError(where, "an object");
    const json* type = Field(part, "type");
    if (type == nullptr || !type->is_string()) return TypeError(where + ".type", "a string");
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "input_image" || t == "input_file" || t == "input_audio") {
      return InvalidArgumentError(Quoted(where) + " is an " + t + ": llmd serves text only");
    }
    if (t != "input_text" && t != "output_text") {
      return InvalidArgumentError(Quoted(where + ".type") + " must be input_text or output_text (got '" + t + "')");
    }
    const json* v = Field(part, "text");
    if (v == nullptr || !v->is_string()) return TypeError(where + ".text", "a string");
    text += v->get_ref<const std::string&>();
  }
  return text;
}

// A message's or a function call output's text: a string, or an array of text parts.
Result<std::string> TextOf(const json& obj, const char* key, const std::string& field) {
  const json* c = Field(obj, key);
  if (c != nullptr && c->is_string()) return c->get<std::string>();
  if (c == nullptr || !c->is_array()) return TypeError(field, "a string or an array of text parts");
  return PartsText(*c, field);
}

// Input items become chat messages. Function calls join the assistant message before them
// (a reply's text and its calls are one chat turn); outputs become tool messages.
class InputBuilder {
 public:
  explicit InputBuilder(Conversation* conversation) : conversation_(*conversation) {}

  Status Item(const json& item, const std::string& field) {
    if (!item.is_object()) return TypeError(field, "an object");
    const json* type = Field(item, "type");
    if (type != nullptr && !type->is_string()) return TypeError(field + ".type", "a string");
    const std::string t = type == nullptr ? "message" : type->get<std::string>();
    if (t == "message") return Message(item, field);
    if (t == "function_call") return FunctionCall(item, field);
    if (t == "function_call_output") return FunctionCallOutput(item, field);
    // A previous response's reasoning, sent back with its output: chat templates leave
    // earlier turns' reasoning out of the prompt, so the model would not see it anyway.
    if (t == "reasoning") return Status::Ok();
    if (t == "item_reference") {
      return InvalidArgumentError(Quoted(field) + " is an item_reference: llmd keeps no items (stateless); "
                                  "send the item itself");
    }
    return InvalidArgumentError(Quoted(field + ".type") + " '" + t + "' is not supported by llmd (only message, "
                                "function_call, function_call_output and reasoning items)");
  }

  // Calls, results and the last turn are ValidateConversation's; reasoning items are Responses' own.
  Status Finish() const {
    if (!added_) return InvalidArgumentError("'input' has no message (reasoning items alone are not a turn)");
    return Status::Ok();
  }

 private:
  Status Message(const json& item, const std::string& field) {
    LLMD_ASSIGN_OR_RETURN(auto role, OptionalString(item, "role", field + ".role",
                                                    {"user", "system", "developer", "assistant"}));
    if (!role) return TypeError(field + ".role", "user, system, developer or assistant");
    LLMD_ASSIGN_OR_RETURN(std::string content, TextOf(item, "content", field + ".content"));
    conversation_.Add({*role == "developer" ? "system" : *role, std::move(content)}, field);
    added_ = true;
    return Status::Ok();
  }

  Status FunctionCall(const json& item, const std::string& field) {
    LLMD_ASSIGN_OR_RETURN(std::string call_id, RequiredString(item, "call_id", field));
    LLMD_ASSIGN_OR_RETURN(std::string name, RequiredString(item, "name", field));
    const json* args = Field(item, "arguments");
    if (args == nullptr || !args->is_string()) return TypeError(field + ".arguments", "a string (JSON text)");
    std::string arguments = args->get<std::string>();
    // Templates render the arguments as JSON; an empty string is a call without any.
    if (arguments.empty()) arguments = "{}";
    if (!json::accept(arguments)) return TypeError(field + ".arguments", "JSON text");
    conversation_.AddCall({std::move(call_id), std::move(name), std::move(arguments)}, field);
    added_ = true;
    return Status::Ok();
  }

  Status FunctionCallOutput(const json& item, const std::string& field) {
    LLMD_ASSIGN_OR_RETURN(std::string call_id, RequiredString(item, "call_id", field));
    LLMD_ASSIGN_OR_RETURN(std::string output, TextOf(item, "output", field + ".output"));
    chat::Message m{"tool", std::move(output)};
    m.tool_call_id = std::move(call_id);
    conversation_.Add(std::move(m), field);
    added_ = true;  // a turn; ValidateConversation refuses it if it answers no call
    return Status::Ok();
  }

  Conversation& conversation_;
  bool added_ = false;  // a message or call from the input (not just instructions)
};

// store and previous_response_id: whether to keep this response, and the conversation of the
// one it follows (`prior`, Responses items), through the routes' lookup.
Status ReadStorage(const json& j, const PreviousResponseLookup& previous, ResponsesRequest* r, ordered* echo,
                   json* prior) {
  std::optional<bool> store;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "store", &store));
  r->store = store.value_or(true);
  (*echo)["store"] = r->store;
  LLMD_ASSIGN_OR_RETURN(auto previous_id, OptionalString(j, "previous_response_id", "previous_response_id"));
  (*echo)["previous_response_id"] = previous_id ? ordered(*previous_id) : ordered(nullptr);
  if (!previous_id) return Status::Ok();
  if (!previous) {
    return InvalidArgumentError("'previous_response_id' cannot be used here: there is no response store");
  }
  LLMD_ASSIGN_OR_RETURN(std::string items, previous(*previous_id));
  *prior = json::parse(items, nullptr, /*allow_exceptions=*/false);
  if (!prior->is_array()) return InternalError("stored response " + *previous_id + " has no conversation");
  return Status::Ok();
}

// The input as chat messages, with where each came from for ValidateConversation; `items`
// gets the conversation as Responses items (`prior`'s, then the input's).
Status ReadInput(const json& j, const json& prior, Conversation* conversation, ordered* echo, json* items) {
  LLMD_ASSIGN_OR_RETURN(auto instructions, OptionalString(j, "instructions", "instructions"));
  (*echo)["instructions"] = instructions ? ordered(*instructions) : ordered(nullptr);
  if (instructions) conversation->Add({"system", *instructions}, "instructions");
  const json* input = Field(j, "input");
  if (input == nullptr) return InvalidArgumentError("'input' is required");
  if (!input->is_string() && (!input->is_array() || input->empty())) {
    return TypeError("input", "a string or a non-empty array of items");
  }
  // The previous response's conversation, as its items were when stored (checked then).
  InputBuilder builder(conversation);
  for (size_t i = 0; i < prior.size(); ++i) {
    LLMD_RETURN_IF_ERROR(builder.Item(prior[i], "previous_response_id's item " + std::to_string(i)));
  }
  *items = prior;
  if (input->is_string()) {
    conversation->Add({"user", input->get<std::string>()}, "input");
    items->push_back({{"type", "message"}, {"role", "user"}, {"content", *input}});
    return Status::Ok();
  }
  for (size_t i = 0; i < input->size(); ++i) {
    LLMD_RETURN_IF_ERROR(builder.Item((*input)[i], "input[" + std::to_string(i) + "]"));
    items->push_back((*input)[i]);
  }
  return builder.Finish();
}

Status ReadSampling(const json& j, ResponsesRequest* r, ordered* echo) {
  LLMD_ASSIGN_OR_RETURN(auto model, OptionalString(j, "model", "model"));
  r->model = model;
  std::optional<int64_t> max_tokens;
  // 0 is allowed, as on chat: an empty, incomplete answer.
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "max_output_tokens", 0, UINT32_MAX, &max_tokens));
  if (max_tokens) r->max_tokens = static_cast<uint32_t>(*max_tokens);
  (*echo)["max_output_tokens"] = max_tokens ? ordered(*max_tokens) : ordered(nullptr);
  LLMD_RETURN_IF_ERROR(ReadNumber(j, "temperature", 0, 2, &r->temperature));
  LLMD_RETURN_IF_ERROR(ReadNumber(j, "top_p", 0, 1, &r->top_p));
  // The echo repeats what was sent (doubles, so 0.7 does not come back as 0.699999988).
  (*echo)["temperature"] = r->temperature ? ordered(j.at("temperature")) : ordered(nullptr);
  (*echo)["top_p"] = r->top_p ? ordered(j.at("top_p")) : ordered(nullptr);
  std::optional<bool> stream;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "stream", &stream));
  r->stream = stream.value_or(false);
  return Status::Ok();
}

// A Responses function tool: {type: "function", name, description, parameters, strict}.
Result<ToolSpec> FunctionTool(const json& tool, const std::string& field) {
  LLMD_RETURN_IF_ERROR(CheckToolType(tool, field, "function", /*required=*/true, "only function tools"));
  return ReadToolFields(tool, field, "parameters", /*schema_required=*/false);
}

// The Response's copy of a tool, as sent: every field FunctionTool has, null where not sent.
ordered EchoedTool(const json& tool) {
  auto or_null = [&](const char* key) { return tool.contains(key) ? ordered(tool[key]) : ordered(nullptr); };
  return {{"type", "function"}, {"name", tool["name"]}, {"description", or_null("description")},
          {"parameters", or_null("parameters")}, {"strict", or_null("strict")}};
}

// tool_choice: auto, none, required or {type: "function", name}.
Result<ToolChoice> ReadToolChoice(const json& j, ordered* echo) {
  ToolChoice out;
  const json* choice = Field(j, "tool_choice");
  (*echo)["tool_choice"] = choice ? ordered(*choice) : ordered("auto");
  if (choice == nullptr) return out;
  if (choice->is_string()) {
    const std::string& c = choice->get_ref<const std::string&>();
    if (c == "none") out.mode = engine::ToolChoice::kNone;
    if (c == "required") out.mode = engine::ToolChoice::kRequired;
    if (c != "auto" && c != "none" && c != "required") {
      return InvalidArgumentError("'tool_choice' must be auto, none, required or {\"type\":\"function\",\"name\":...} "
                                  "(got '" + c + "')");
    }
    return out;
  }
  if (!choice->is_object()) return TypeError("tool_choice", "a string or an object");
  const json* type = Field(*choice, "type");
  if (type == nullptr || !type->is_string()) return TypeError("tool_choice.type", "a string");
  if (*type != "function") {
    return InvalidArgumentError("'tool_choice' of type '" + type->get<std::string>() +
                                "' is not supported by llmd (only auto, none, required or a function)");
  }
  LLMD_ASSIGN_OR_RETURN(out.name, RequiredString(*choice, "name", "tool_choice"));
  out.mode = engine::ToolChoice::kNamed;
  return out;
}

// tools, tool_choice, parallel_tool_calls and max_tool_calls; the input checked against them.
Status ReadTools(const json& j, Conversation conversation, ResponsesRequest* r, ordered* echo) {
  LLMD_ASSIGN_OR_RETURN(std::vector<ToolSpec> tools, ReadToolList(j, FunctionTool));
  ordered echoed = ordered::array();
  if (!tools.empty()) {
    for (const json& tool : j.at("tools")) echoed.push_back(EchoedTool(tool));
  }
  (*echo)["tools"] = std::move(echoed);
  LLMD_ASSIGN_OR_RETURN(ToolChoice choice, ReadToolChoice(j, echo));
  static const ChatDialect kInput{.list = "input",
                                  .call = "function_call",
                                  .call_id = "call_id",
                                  .result = "function_call_output",
                                  .result_id = "call_id",
                                  .choice_name = "tool_choice.name"};
  LLMD_RETURN_IF_ERROR(ValidateConversation(conversation.messages, tools, choice, kInput, conversation.origins));
  r->messages = std::move(conversation.messages);
  ApplyTools(tools, choice, &r->format);
  std::optional<bool> parallel;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "parallel_tool_calls", &parallel));
  r->format.parallel_tool_calls = parallel.value_or(true);
  // max_tool_calls 1 is one call (as parallel_tool_calls false); llmd cannot stop at N > 1.
  std::optional<int64_t> max_calls;
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "max_tool_calls", 1, 1, &max_calls));
  if (max_calls) {
    r->format.parallel_tool_calls = false;
    (*echo)["max_tool_calls"] = *max_calls;
  }
  (*echo)["parallel_tool_calls"] = r->format.parallel_tool_calls;
  return Status::Ok();
}

// text.format: free text, any JSON object, or JSON following a schema.
Status ReadTextFormat(const json& j, ResponsesRequest* r, ordered* echo) {
  ordered text = {{"format", {{"type", "text"}}}};
  const json* t = Field(j, "text");
  if (t != nullptr && !t->is_object()) return TypeError("text", "an object");
  if (const json* format = t ? Field(*t, "format") : nullptr) {
    if (!format->is_object()) return TypeError("text.format", "an object");
    LLMD_ASSIGN_OR_RETURN(auto type, OptionalString(*format, "type", "text.format.type",
                                                    {"text", "json_object", "json_schema"}));
    if (!type) return TypeError("text.format.type", "text, json_object or json_schema");
    if (*type == "json_object") {
      r->format.json_schema = R"({"type":"object"})";
    } else if (*type == "json_schema") {
      LLMD_RETURN_IF_ERROR(RequiredString(*format, "name", "text.format").error());
      const json* schema = Field(*format, "schema");
      if (schema == nullptr || !schema->is_object()) return TypeError("text.format.schema", "an object (a JSON schema)");
      LLMD_RETURN_IF_ERROR(OptionalString(*format, "description", "text.format.description").error());
      std::optional<bool> strict;  // the grammar holds the reply to the schema either way
      LLMD_RETURN_IF_ERROR(ReadBool(*format, "strict", &strict, "text.format.strict"));
      r->format.json_schema = schema->dump();
    }
    text["format"] = *format;
  }
  if (t != nullptr) {
    // A hint llmd's models do not take: only the default is honoured.
    LLMD_ASSIGN_OR_RETURN(auto verbosity, OptionalString(*t, "verbosity", "text.verbosity", {"low", "medium", "high"}));
    if (verbosity && *verbosity != "medium") {
      return InvalidArgumentError("'text.verbosity' '" + *verbosity + "' is not supported by llmd (only medium)");
    }
    if (verbosity) text["verbosity"] = *verbosity;
  }
  (*echo)["text"] = std::move(text);
  return Status::Ok();
}

// reasoning.effort switches thinking; llmd has no graded effort and writes no summaries.
Status ReadReasoning(const json& j, ResponsesRequest* r, ordered* echo) {
  ordered echoed = {{"effort", nullptr}, {"summary", nullptr}};
  const json* reasoning = Field(j, "reasoning");
  if (reasoning != nullptr && !reasoning->is_object()) return TypeError("reasoning", "an object");
  if (reasoning != nullptr) {
    LLMD_ASSIGN_OR_RETURN(auto effort, OptionalString(*reasoning, "effort", "reasoning.effort",
                                                      {"none", "minimal", "low", "medium", "high", "xhigh", "max"}));
    if (effort) {
      r->enable_thinking = *effort != "none" && *effort != "minimal";
      echoed["effort"] = *effort;
    }
    for (const char* key : {"summary", "generate_summary"}) {
      const std::string field = std::string("reasoning.") + key;
      LLMD_ASSIGN_OR_RETURN(auto summary, OptionalString(*reasoning, key, field, {"auto", "concise", "detailed"}));
      if (summary && *summary != "auto") {
        return InvalidArgumentError(Quoted(field) + " '" + *summary + "' is not supported: llmd returns the reasoning "
                                    "itself (the reasoning item's content), not a summary; send auto or leave it out");
      }
      if (summary) echoed["summary"] = *summary;
    }
    LLMD_ASSIGN_OR_RETURN(auto context, OptionalString(*reasoning, "context", "reasoning.context",
                                                       {"auto", "current_turn", "all_turns"}));
    if (context == "all_turns") {
      return InvalidArgumentError("'reasoning.context' \"all_turns\" is not supported: the model sees the current "
                                  "turn's reasoning only");
    }
    LLMD_ASSIGN_OR_RETURN(auto mode, OptionalString(*reasoning, "mode", "reasoning.mode"));
    if (mode && *mode != "standard") {
      return InvalidArgumentError("'reasoning.mode' '" + *mode + "' is not supported by llmd (only standard)");
    }
  }
  (*echo)["reasoning"] = std::move(echoed);
  return Status::Ok();
}

// include: what extra the output carries. Logprobs are honoured when they can cover the
// answer alone (no tool calls, no reasoning among the tokens); the rest name items llmd
// never makes, so asking for them changes nothing.
Status ReadInclude(const json& j, ResponsesRequest* r, ordered* echo) {
  bool logprobs = false;
  if (const json* include = Field(j, "include")) {
    if (!include->is_array()) return TypeError("include", "an array of strings");
    for (size_t i = 0; i < include->size(); ++i) {
      const json& v = (*include)[i];
      const std::string field = "include[" + std::to_string(i) + "]";
      if (!v.is_string()) return TypeError(field, "a string");
      if (!IsResponseIncludable(v.get<std::string>())) {
        return InvalidArgumentError(Quoted(field) + " '" + v.get<std::string>() + "' is not a known include value");
      }
      logprobs = logprobs || v == "message.output_text.logprobs";
    }
  }
  std::optional<int64_t> top;
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "top_logprobs", 0, kMaxTopLogprobs, &top));
  (*echo)["top_logprobs"] = top.value_or(0);
  if (!logprobs) return Status::Ok();
  if (!r->format.tools.empty()) {
    return InvalidArgumentError("'include' message.output_text.logprobs cannot be used with 'tools' in llmd");
  }
  if (r->enable_thinking.value_or(false)) {
    return InvalidArgumentError("'include' message.output_text.logprobs cannot be used with 'reasoning' in llmd "
                                "(the logprobs cover the answer only); send reasoning.effort none");
  }
  r->enable_thinking = false;
  r->top_logprobs = static_cast<int32_t>(top.value_or(0));
  return Status::Ok();
}

// Caller-side labels the Response repeats; they do not change the answer.
Status ReadLabels(const json& j, ordered* echo) {
  const json* metadata = Field(j, "metadata");
  if (metadata != nullptr) {
    if (!metadata->is_object()) return TypeError("metadata", "an object of strings");
    for (const auto& [key, value] : metadata->items()) {
      if (!value.is_string()) return TypeError("metadata." + key, "a string");
    }
  }
  (*echo)["metadata"] = metadata ? ordered(*metadata) : ordered::object();
  LLMD_ASSIGN_OR_RETURN(auto user, OptionalString(j, "user", "user"));
  if (user) (*echo)["user"] = *user;
  LLMD_ASSIGN_OR_RETURN(auto safety_identifier, OptionalString(j, "safety_identifier", "safety_identifier"));
  if (safety_identifier) (*echo)["safety_identifier"] = *safety_identifier;
  return Status::Ok();
}

}  // namespace

bool IsResponseIncludable(std::string_view value) {
  static const std::set<std::string, std::less<>> kKnown = {
      "message.output_text.logprobs", "reasoning.encrypted_content", "file_search_call.results",
      "web_search_call.results",      "web_search_call.action.sources", "message.input_image.image_url",
      "computer_call_output.output.image_url", "code_interpreter_call.outputs"};
  return kKnown.find(value) != kKnown.end();
}

Result<ResponsesRequest> ParseResponsesRequest(std::string_view body, const PreviousResponseLookup& previous) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  ResponsesRequest r;
  r.chat = true;
  ordered echo = ordered::object();
  LLMD_RETURN_IF_ERROR(RefuseStatefulFields(j));
  LLMD_RETURN_IF_ERROR(RefuseUnhonourable(j));
  LLMD_RETURN_IF_ERROR(ReadTruncation(j, &r, &echo));
  LLMD_ASSIGN_OR_RETURN(r.request_class, OpenAiRequestClass(j));
  json prior = json::array(), items;
  LLMD_RETURN_IF_ERROR(ReadStorage(j, previous, &r, &echo, &prior));
  Conversation conversation;
  LLMD_RETURN_IF_ERROR(ReadInput(j, prior, &conversation, &echo, &items));
  LLMD_RETURN_IF_ERROR(ReadSampling(j, &r, &echo));
  LLMD_RETURN_IF_ERROR(ReadTools(j, std::move(conversation), &r, &echo));
  LLMD_RETURN_IF_ERROR(ReadTextFormat(j, &r, &echo));
  LLMD_RETURN_IF_ERROR(ReadReasoning(j, &r, &echo));
  LLMD_RETURN_IF_ERROR(ReadInclude(j, &r, &echo));  // after tools and reasoning, which it checks
  LLMD_RETURN_IF_ERROR(ReadLabels(j, &echo));
  r.echo_json = echo.dump(-1, ' ', false, json::error_handler_t::replace);
  r.items_json = items.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

}  // namespace llmd::http
