// Reading the chat surface (chat_surface.h) from JSON: the shapes more than one API shares,
// read once. Each API's parser keeps only what its own wire shape adds.
#ifndef LLMD_HTTP_CHAT_JSON_H_
#define LLMD_HTTP_CHAT_JSON_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/prompt_pieces.h"
#include "http/chat_surface.h"
#include "llmd/result.h"

namespace llmd::http {

// --- Tools

// One entry of "tools" in an API's shape; `tool` is an object, `field` is "tools[i]".
using ToolReader =
    std::function<Result<ToolSpec>(const nlohmann::json& tool, const std::string& field)>;

// The request's "tools" (absent or null: none), each entry checked to be an object and read.
Result<std::vector<ToolSpec>> ReadToolList(const nlohmann::json& body, const ToolReader& read_one);

// A tool's "type": `type`, or absent where `required` is false. Another type is a tool llmd
// does not have: "'tools[i]' is a 'T' tool, which llmd does not have (ONLY)".
Status CheckToolType(const nlohmann::json& tool, const std::string& field, const char* type,
                     bool required, const char* only);

// name (non-empty), description (a string), the schema under `schema_key` (an object;
// `schema_required`) and strict (true or false, read and not applied: the grammar holds every
// call to its schema either way) from `obj`, named `where` in errors.
Result<ToolSpec> ReadToolFields(const nlohmann::json& obj, const std::string& where,
                                const char* schema_key, bool schema_required);

// The chat-completions tool {type:"function", function:{name, description, parameters,
// strict}} (OpenAI; Ollama, whose clients may leave the type out).
Result<ToolSpec> ReadFunctionTool(const nlohmann::json& tool, const std::string& field,
                                  bool type_required);

// --- Messages of the chat-completions shape (OpenAI, Ollama)

// A message object with a string role; which roles are known is ValidateConversation's.
Result<chat::Message> MessageWithRole(const nlohmann::json& message, const std::string& field);

// A call's arguments as JSON text, from the value sent (nullptr: none); `field` names it. The
// APIs differ here: OpenAI sends a string of JSON, Ollama an object.
using ArgumentsReader =
    std::function<Result<std::string>(const nlohmann::json* value, const std::string& field)>;

// A message's "tool_calls": [{id?, type?, function:{name, arguments}}], ids as sent (empty
// where none was: ValidateConversation refuses that unless the API numbers its calls itself).
Result<std::vector<chat::ToolCall>> ReadChatToolCalls(const nlohmann::json& message,
                                                      const std::string& field,
                                                      const ArgumentsReader& arguments);

}  // namespace llmd::http

#endif  // LLMD_HTTP_CHAT_JSON_H_
