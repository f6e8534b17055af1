// The typed chat surface every generating API maps its wire shape into: the tools a request
// offers (ToolSpec), what it asks of them (ToolChoice), and the one check of a conversation
// against them (ValidateConversation). The rules live here once so that a fault is refused on
// every API alike; where the APIs really differ (their words for calls and results,
// Anthropic's required user turn) the difference is a ChatDialect value, not a copy.
//
// Typed values only; chat_json.h reads the JSON shapes several APIs share into them.
#ifndef LLMD_HTTP_CHAT_SURFACE_H_
#define LLMD_HTTP_CHAT_SURFACE_H_

#include <string>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/types.h"
#include "llmd/result.h"

namespace llmd::http {

// A function the model may call (name, description, parameters: what the engine shows the
// model), and where the request defined it.
struct ToolSpec : engine::ChatTool {
  std::string field;  // "tools[1].function", for errors
};

// What the request asks of the tools. kRequired and kNamed need tools; kNamed names one.
struct ToolChoice {
  engine::ToolChoice mode = engine::ToolChoice::kAuto;
  std::string name;  // kNamed
};

// Where a message and each of its calls stood in the request, for errors.
struct MessageOrigin {
  std::string field;               // "messages[3]", "input[2]", "messages[1].content[0]"
  std::vector<std::string> calls;  // one per tool call: "messages[1].tool_calls[0]", "input[4]"
};

// A conversation being read from a request whose items are not one message each (Anthropic's
// blocks, Responses' items): the messages and, parallel to them, where each stood.
struct Conversation {
  std::vector<chat::Message> messages;
  std::vector<MessageOrigin> origins;

  void Add(chat::Message message, std::string field);
  // The call joins the assistant message the conversation ends with, else a new one: a
  // reply's text and its calls are one chat turn.
  void AddCall(chat::ToolCall call, std::string field);
};

// What one API calls the parts of a conversation, and the rules where APIs differ.
struct ChatDialect {
  const char* list = "messages";  // the field holding the conversation
  const char* roles =
      "system, user, assistant or tool";   // the roles it accepts, as told to clients
  const char* call = "tool call";          // a call in the history
  const char* call_id = "id";              // the key of a call's id
  const char* result = "tool message";     // a call's result
  const char* result_id = "tool_call_id";  // the key naming the call a result answers
  const char* choice_name = "tool_choice.function.name";  // where a named choice names its tool
  bool needs_user_turn = false;  // Anthropic: a user turn (text or tool results) is required
};

// Checks, once for every API: tool names are unique; a required or named choice has tools,
// and a named one is among them; every message has a known role and only assistant messages
// carry calls; every call has an id not used before; every tool result answers an earlier
// call not answered yet; every call is answered; a user turn where the dialect needs one; the
// last message is not the assistant's (llmd does not continue a reply, on any API).
//
// `origins` runs parallel to `messages`; empty means message i is "LIST[i]" and its call k
// "LIST[i].tool_calls[k]" (the OpenAI and Ollama shapes, one wire message per message).
Status ValidateConversation(const std::vector<chat::Message>& messages,
                            const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                            const ChatDialect& dialect,
                            const std::vector<MessageOrigin>& origins = {});

// The tools and the choice as the engine takes them: `tools` (each tool without its field;
// empty: no tools), `tool_choice` and `tool_name`.
void ApplyTools(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                engine::ChatFormat* format);

}  // namespace llmd::http

#endif  // LLMD_HTTP_CHAT_SURFACE_H_
