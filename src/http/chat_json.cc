#include "http/chat_json.h"

#include <optional>

#include "http/api_text.h"
#include "http/json_fields.h"

namespace llmd::http {

using nlohmann::json;

Result<std::vector<ToolSpec>> ReadToolList(const json& body, const ToolReader& read_one) {
  std::vector<ToolSpec> tools;
  const json* list = Field(body, "tools");
  if (list == nullptr) return tools;
  if (!list->is_array()) return TypeError("tools", "an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = "tools[" + std::to_string(i) + "]";
    if (!(*list)[i].is_object()) return TypeError(field, "an object");
    LLMD_ASSIGN_OR_RETURN(ToolSpec tool, read_one((*list)[i], field));
    tools.push_back(std::move(tool));
  }
  return tools;
}

Status CheckToolType(const json& tool, const std::string& field, const char* type, bool required,
                     const char* only) {
  const json* t = Field(tool, "type");
  if (t == nullptr && !required) return Status::Ok();
  if (t == nullptr || !t->is_string()) return TypeError(field + ".type", "a string");
  if (*t == type) return Status::Ok();
  return InvalidArgumentError(Quoted(field) + " is a '" + t->get<std::string>() +
                              "' tool, which llmd does not have (" + only + ")");
}

Result<ToolSpec> ReadToolFields(const json& obj, const std::string& where, const char* schema_key,
                                bool schema_required) {
  ToolSpec tool;
  tool.field = where;
  LLMD_ASSIGN_OR_RETURN(tool.name, RequiredString(obj, "name", where));
  LLMD_ASSIGN_OR_RETURN(auto description,
                        OptionalString(obj, "description", where + ".description"));
  tool.description = description.value_or("");
  const json* schema = Field(obj, schema_key);
  if (schema != nullptr ? !schema->is_object() : schema_required) {
    return TypeError(where + "." + schema_key, "an object (a JSON schema)");
  }
  if (schema != nullptr) tool.parameters = schema->dump();
  std::optional<bool> strict;
  LLMD_RETURN_IF_ERROR(ReadBool(obj, "strict", &strict, where + ".strict"));
  return tool;
}

Result<ToolSpec> ReadFunctionTool(const json& tool, const std::string& field, bool type_required) {
  LLMD_RETURN_IF_ERROR(
      CheckToolType(tool, field, "function", type_required, "only function tools"));
  const json* function = Field(tool, "function");
  if (function == nullptr || !function->is_object())
    return TypeError(field + ".function", "an object");
  return ReadToolFields(*function, field + ".function", "parameters", false);
}

Result<chat::Message> MessageWithRole(const json& message, const std::string& field) {
  if (!message.is_object()) return TypeError(field, "an object");
  const json* role = Field(message, "role");
  if (role == nullptr || !role->is_string()) return TypeError(field + ".role", "a string");
  chat::Message m;
  m.role = role->get<std::string>();
  return m;
}

Result<std::vector<chat::ToolCall>> ReadChatToolCalls(const json& message, const std::string& field,
                                                      const ArgumentsReader& arguments) {
  std::vector<chat::ToolCall> calls;
  const json* list = Field(message, "tool_calls");
  if (list == nullptr) return calls;
  if (!list->is_array()) return TypeError(field + ".tool_calls", "an array");
  for (size_t k = 0; k < list->size(); ++k) {
    const json& c = (*list)[k];
    const std::string at = field + ".tool_calls[" + std::to_string(k) + "]";
    const json* function = c.is_object() ? Field(c, "function") : nullptr;
    if (function == nullptr || !function->is_object())
      return TypeError(at + ".function", "an object");
    chat::ToolCall call;
    LLMD_ASSIGN_OR_RETURN(call.name, RequiredString(*function, "name", at + ".function"));
    LLMD_ASSIGN_OR_RETURN(call.arguments,
                          arguments(Field(*function, "arguments"), at + ".function.arguments"));
    if (const json* id = Field(c, "id")) {
      if (!id->is_string()) return TypeError(at + ".id", "a string");
      call.id = id->get<std::string>();
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace llmd::http
