#include "http/request_class_fields.h"
#include "http/anthropic/anthropic_api.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <utility>

#include "http/api_text.h"
#include "http/block_stream.h"
#include "http/chat_json.h"
#include "http/chat_surface.h"
#include "http/json_fields.h"
#include "http/json_reply.h"
#include "http/reply_stream.h"

namespace llmd::http {
namespace {

using nlohmann::json;
// What we write keeps Anthropic's field order, for people reading it.
using ordered = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------
// Reading the request (the field readers are json_fields.h).

// A whole number in lo..hi, named `field` in errors (for fields inside objects).
Status ReadCount(const json& obj, const char* key, const std::string& field, int64_t lo, int64_t hi,
                 std::optional<int64_t>* out) {
  const json* v = Field(obj, key);
  if (v == nullptr) return Status::Ok();
  if (!v->is_number_integer()) return TypeError(field, "an integer");
  const bool too_big = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
  if (too_big || v->get<int64_t>() < lo || v->get<int64_t>() > hi) {
    return InvalidArgumentError(Quoted(field) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = v->get<int64_t>();
  return Status::Ok();
}

// cache_control, on the request or on a block: llmd caches every prompt's prefix by itself,
// so the marker asks for nothing more. Its shape is still checked.
Status CheckCacheControl(const json& obj, const std::string& where) {
  const json* cc = Field(obj, "cache_control");
  if (cc == nullptr) return Status::Ok();
  const std::string field = where.empty() ? "cache_control" : where + ".cache_control";
  if (!cc->is_object()) return TypeError(field, "an object");
  LLMD_ASSIGN_OR_RETURN(auto type, OptionalString(*cc, "type", field + ".type", {"ephemeral"}));
  if (!type) return TypeError(field + ".type", "\"ephemeral\"");
  return OptionalString(*cc, "ttl", field + ".ttl", {"5m", "1h"}).error();
}

// The type of a content block, checked to be a string.
Result<std::string> BlockType(const json& block, const std::string& where) {
  if (!block.is_object()) return TypeError(where, "an object (a content block)");
  const json* type = Field(block, "type");
  if (type == nullptr || !type->is_string()) return TypeError(where + ".type", "a string");
  return type->get<std::string>();
}

// Blocks llmd cannot take: media, and the blocks of server tools it does not have.
Status RefuseBlock(const std::string& type, const std::string& where) {
  if (type == "image" || type == "document" || type == "search_result") {
    return InvalidArgumentError(Quoted(where) + (type == "image" ? " is an " : " is a ") + type +
                                " block: llmd serves text only");
  }
  return InvalidArgumentError(Quoted(where + ".type") + " '" + type +
                              "' is not supported by llmd (text, tool_use, tool_result, thinking and "
                              "redacted_thinking blocks only)");
}

// A text block's text; its cache_control and citations (of an earlier answer) are accepted.
Result<std::string> TextBlock(const json& block, const std::string& where) {
  const json* text = Field(block, "text");
  if (text == nullptr || !text->is_string()) return TypeError(where + ".text", "a string");
  LLMD_RETURN_IF_ERROR(CheckCacheControl(block, where));
  if (const json* c = Field(block, "citations"); c != nullptr && !c->is_array()) {
    return TypeError(where + ".citations", "an array");
  }
  return text->get<std::string>();
}

void Join(std::string* text, const std::string& more) {
  if (!text->empty() && !more.empty()) *text += "\n";
  *text += more;
}

// A string, or an array of text blocks only (system, a system turn, a tool result).
Result<std::string> TextOnly(const json& value, const std::string& field) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return TypeError(field, "a string or an array of text blocks");
  std::string text;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string where = field + "[" + std::to_string(i) + "]";
    LLMD_ASSIGN_OR_RETURN(std::string type, BlockType(value[i], where));
    if (type != "text") return RefuseBlock(type, where);
    LLMD_ASSIGN_OR_RETURN(std::string t, TextBlock(value[i], where));
    Join(&text, t);
  }
  return text;
}

// Turns become chat messages: text into the message of the turn's role (consecutive turns of
// one role are one message, as Anthropic combines them), tool_use blocks into the assistant
// message's calls, tool_result blocks into tool messages.
class ConversationBuilder {
 public:
  explicit ConversationBuilder(Conversation* conversation)
      : conversation_(*conversation), messages_(conversation->messages) {}

  Status Turn(const json& m, const std::string& field) {
    if (!m.is_object()) return TypeError(field, "an object");
    LLMD_ASSIGN_OR_RETURN(auto role, OptionalString(m, "role", field + ".role", {"user", "assistant", "system"}));
    if (!role) return TypeError(field + ".role", "user, assistant or system");
    const json* content = Field(m, "content");
    if (content == nullptr) return TypeError(field + ".content", "a string or an array of content blocks");
    const std::string where = field + ".content";
    if (*role == "system") {
      LLMD_ASSIGN_OR_RETURN(std::string text, TextOnly(*content, where));
      conversation_.Add({"system", std::move(text)}, field);
      return Status::Ok();
    }
    if (content->is_string()) {
      AddText(*role, content->get<std::string>(), field);
      return Status::Ok();
    }
    if (!content->is_array()) return TypeError(where, "a string or an array of content blocks");
    const size_t before = messages_.size();
    for (size_t i = 0; i < content->size(); ++i) {
      LLMD_RETURN_IF_ERROR(Block((*content)[i], *role, where + "[" + std::to_string(i) + "]"));
    }
    // A turn without blocks (or only dropped ones) is still a turn.
    if (messages_.size() == before && (messages_.empty() || messages_.back().role != *role)) AddText(*role, "", field);
    return Status::Ok();
  }

 private:
  void AddText(const std::string& role, const std::string& text, const std::string& field) {
    if (!messages_.empty() && messages_.back().role == role) {
      Join(&messages_.back().content, text);
      return;
    }
    conversation_.Add({role, text}, field);
  }

  Status Block(const json& block, const std::string& role, const std::string& where) {
    LLMD_ASSIGN_OR_RETURN(std::string type, BlockType(block, where));
    const bool assistant = role == "assistant";
    if (type == "text") {
      LLMD_ASSIGN_OR_RETURN(std::string text, TextBlock(block, where));
      AddText(role, text, where);
      return Status::Ok();
    }
    if (type == "tool_use" || type == "thinking" || type == "redacted_thinking") {
      if (!assistant) return InvalidArgumentError(Quoted(where) + " is a " + type + " block, which only assistant turns carry");
      if (type == "tool_use") return ToolUse(block, where);
      // Earlier turns' reasoning: chat templates leave it out, so it is checked and dropped.
      const char* key = type == "thinking" ? "thinking" : "data";
      const json* v = Field(block, key);
      if (v == nullptr || !v->is_string()) return TypeError(where + "." + key, "a string");
      return Status::Ok();
    }
    if (type == "tool_result") {
      if (assistant) return InvalidArgumentError(Quoted(where) + " is a tool_result block, which only user turns carry");
      return ToolResult(block, where);
    }
    return RefuseBlock(type, where);
  }

  Status ToolUse(const json& block, const std::string& where) {
    LLMD_ASSIGN_OR_RETURN(std::string id, RequiredString(block, "id", where));
    LLMD_ASSIGN_OR_RETURN(std::string name, RequiredString(block, "name", where));
    const json* input = Field(block, "input");
    if (input == nullptr || !input->is_object()) return TypeError(where + ".input", "an object");
    if (const json* caller = Field(block, "caller")) {
      if (!caller->is_object() || caller->value("type", json()) != "direct") {
        return InvalidArgumentError(Quoted(where + ".caller") + " must be {\"type\":\"direct\"}: llmd has no server "
                                    "tools to call tools");
      }
    }
    LLMD_RETURN_IF_ERROR(CheckCacheControl(block, where));
    conversation_.AddCall({std::move(id), std::move(name), input->dump()}, where);
    return Status::Ok();
  }

  Status ToolResult(const json& block, const std::string& where) {
    LLMD_ASSIGN_OR_RETURN(std::string id, RequiredString(block, "tool_use_id", where));
    std::string text;
    if (const json* content = Field(block, "content")) {
      LLMD_ASSIGN_OR_RETURN(text, TextOnly(*content, where + ".content"));
    }
    std::optional<bool> is_error;
    LLMD_RETURN_IF_ERROR(ReadBool(block, "is_error", &is_error, where + ".is_error"));
    LLMD_RETURN_IF_ERROR(CheckCacheControl(block, where));
    // Chat templates have no error flag: the model reads it in the result.
    if (is_error.value_or(false)) text = "Error: " + text;
    chat::Message m{"tool", std::move(text)};
    m.tool_call_id = std::move(id);
    conversation_.Add(std::move(m), where);
    return Status::Ok();
  }

  Conversation& conversation_;
  std::vector<chat::Message>& messages_;  // conversation_.messages
};

// The conversation as chat messages, with where each came from for ValidateConversation.
Status ReadConversation(const json& j, Conversation* conversation) {
  if (const json* system = Field(j, "system")) {
    LLMD_ASSIGN_OR_RETURN(std::string text, TextOnly(*system, "system"));
    conversation->Add({"system", std::move(text)}, "system");
  }
  const json* messages = Field(j, "messages");
  if (messages == nullptr) return InvalidArgumentError("'messages' is required");
  if (!messages->is_array() || messages->empty()) return TypeError("messages", "a non-empty array");
  ConversationBuilder builder(conversation);
  for (size_t i = 0; i < messages->size(); ++i) {
    LLMD_RETURN_IF_ERROR(builder.Turn((*messages)[i], "messages[" + std::to_string(i) + "]"));
  }
  return Status::Ok();
}

Status ReadSampling(const json& j, AnthropicBody kind, AnthropicRequest* r) {
  const json* model = Field(j, "model");
  if (model == nullptr || !model->is_string() || model->get_ref<const std::string&>().empty()) {
    return TypeError("model", "a non-empty string");
  }
  r->model = model->get<std::string>();
  if (kind == AnthropicBody::kCountTokens) return Status::Ok();
  std::optional<int64_t> i;
  // 0 is allowed: an empty answer with stop_reason "max_tokens".
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "max_tokens", 0, UINT32_MAX, &i));
  if (!i) return InvalidArgumentError("'max_tokens' is required");
  r->max_tokens = static_cast<uint32_t>(*i);
  i.reset();
  LLMD_RETURN_IF_ERROR(ReadNumber(j, "temperature", 0, 1, &r->temperature));
  LLMD_RETURN_IF_ERROR(ReadNumber(j, "top_p", 0, 1, &r->top_p));
  LLMD_RETURN_IF_ERROR(ReadInteger(j, "top_k", 1, 1 << 20, &i));
  if (i) r->top_k = static_cast<int32_t>(*i);
  std::optional<bool> stream;
  LLMD_RETURN_IF_ERROR(ReadBool(j, "stream", &stream, "stream"));
  r->stream = stream.value_or(false);
  if (const json* stops = Field(j, "stop_sequences")) {
    if (!stops->is_array()) return TypeError("stop_sequences", "an array of strings");
    if (stops->size() > kMaxStopSequences) {
      return InvalidArgumentError("'stop_sequences' has more than " + std::to_string(kMaxStopSequences) + " entries");
    }
    for (size_t k = 0; k < stops->size(); ++k) {
      const json& s = (*stops)[k];
      const std::string field = "stop_sequences[" + std::to_string(k) + "]";
      if (!s.is_string() || s.get_ref<const std::string&>().empty()) return TypeError(field, "a non-empty string");
      if (s.get_ref<const std::string&>().size() > kMaxStopBytes) {
        return InvalidArgumentError(Quoted(field) + " is longer than " + std::to_string(kMaxStopBytes) + " bytes");
      }
      r->stop.push_back(s.get<std::string>());
    }
  }
  return Status::Ok();
}

// A custom tool ({type?: "custom", name, description, input_schema}) and Anthropic's extras.
Result<ToolSpec> CustomTool(const json& tool, const std::string& field) {
  LLMD_RETURN_IF_ERROR(CheckToolType(tool, field, "custom", /*required=*/false,
                                     "only custom tools: name, description, input_schema"));
  LLMD_ASSIGN_OR_RETURN(ToolSpec spec, ReadToolFields(tool, field, "input_schema", /*schema_required=*/true));
  LLMD_RETURN_IF_ERROR(CheckCacheControl(tool, field));
  // The grammar holds every call to its schema, strict or not (ReadToolFields reads strict);
  // arguments stream as they are generated, eager or not.
  std::optional<bool> flag;
  LLMD_RETURN_IF_ERROR(ReadBool(tool, "eager_input_streaming", &flag, field + ".eager_input_streaming"));
  flag.reset();
  LLMD_RETURN_IF_ERROR(ReadBool(tool, "defer_loading", &flag, field + ".defer_loading"));
  if (flag.value_or(false)) {
    return InvalidArgumentError(Quoted(field + ".defer_loading") + " true is not supported: llmd has no tool search; "
                                "every tool is shown to the model");
  }
  if (const json* callers = Field(tool, "allowed_callers")) {
    if (!callers->is_array() || callers->empty() ||
        std::any_of(callers->begin(), callers->end(), [](const json& c) { return c != "direct"; })) {
      return InvalidArgumentError(Quoted(field + ".allowed_callers") + " must be [\"direct\"]: llmd has no code "
                                  "execution to call tools from");
    }
  }
  if (const json* examples = Field(tool, "input_examples"); examples != nullptr && !(examples->is_array() && examples->empty())) {
    return InvalidArgumentError(Quoted(field + ".input_examples") + " is not supported by llmd (the chat template "
                                "shows no examples)");
  }
  return spec;
}

// tool_choice: {type: auto, any, tool (with name) or none, disable_parallel_tool_use}.
Result<ToolChoice> ReadToolChoice(const json& j, AnthropicRequest* r) {
  ToolChoice out;
  const json* choice = Field(j, "tool_choice");
  if (choice == nullptr) return out;
  if (!choice->is_object()) return TypeError("tool_choice", "an object ({\"type\": auto, any, tool or none})");
  LLMD_ASSIGN_OR_RETURN(auto type, OptionalString(*choice, "type", "tool_choice.type", {"auto", "any", "tool", "none"}));
  if (!type) return TypeError("tool_choice.type", "auto, any, tool or none");
  std::optional<bool> disable_parallel;
  LLMD_RETURN_IF_ERROR(
      ReadBool(*choice, "disable_parallel_tool_use", &disable_parallel, "tool_choice.disable_parallel_tool_use"));
  r->format.parallel_tool_calls = !disable_parallel.value_or(false);
  if (*type == "none") out.mode = engine::ToolChoice::kNone;
  if (*type == "any") out.mode = engine::ToolChoice::kRequired;
  if (*type == "tool") {
    LLMD_ASSIGN_OR_RETURN(out.name, RequiredString(*choice, "name", "tool_choice"));
    out.mode = engine::ToolChoice::kNamed;
  }
  return out;
}

// tools and tool_choice, then the conversation checked against them and kept.
Status ReadTools(const json& j, Conversation conversation, AnthropicRequest* r) {
  LLMD_ASSIGN_OR_RETURN(std::vector<ToolSpec> tools, ReadToolList(j, CustomTool));
  LLMD_ASSIGN_OR_RETURN(ToolChoice choice, ReadToolChoice(j, r));
  static const ChatDialect kMessages{.call = "tool_use block",
                                     .result = "tool_result",
                                     .result_id = "tool_use_id",
                                     .choice_name = "tool_choice.name",
                                     .needs_user_turn = true};
  LLMD_RETURN_IF_ERROR(ValidateConversation(conversation.messages, tools, choice, kMessages, conversation.origins));
  r->messages = std::move(conversation.messages);
  ApplyTools(tools, choice, &r->format);
  return Status::Ok();
}

// thinking: the template's switch. budget_tokens is checked as Anthropic checks it (below
// max_tokens) but is no separate limit: thinking and answer share max_tokens.
Status ReadThinking(const json& j, AnthropicRequest* r) {
  const json* thinking = Field(j, "thinking");
  if (thinking == nullptr) return Status::Ok();
  if (!thinking->is_object()) return TypeError("thinking", "an object ({\"type\": enabled, adaptive or disabled})");
  LLMD_ASSIGN_OR_RETURN(auto type, OptionalString(*thinking, "type", "thinking.type"));
  if (!type) return TypeError("thinking.type", "enabled, adaptive or disabled");
  if (*type == "disabled") {
    r->enable_thinking = false;
    return Status::Ok();
  }
  if (*type != "enabled" && *type != "adaptive") {
    return InvalidArgumentError("'thinking.type' '" + *type + "' is not supported by llmd (enabled, adaptive or "
                                "disabled)");
  }
  if (*type == "enabled") {
    std::optional<int64_t> budget;
    LLMD_RETURN_IF_ERROR(ReadCount(*thinking, "budget_tokens", "thinking.budget_tokens", 1, UINT32_MAX, &budget));
    if (!budget) return InvalidArgumentError("'thinking.budget_tokens' is required with thinking.type \"enabled\"");
    if (r->max_tokens && static_cast<uint64_t>(*budget) >= *r->max_tokens) {
      return InvalidArgumentError("'thinking.budget_tokens' must be less than 'max_tokens'");
    }
  }
  LLMD_ASSIGN_OR_RETURN(auto display, OptionalString(*thinking, "display", "thinking.display", {"summarized", "omitted"}));
  r->enable_thinking = true;
  r->omit_thinking = display == "omitted";
  return Status::Ok();
}

// output_config: format (a JSON schema the answer follows); effort only at its default.
Status ReadOutputConfig(const json& j, AnthropicRequest* r) {
  const json* config = Field(j, "output_config");
  if (config == nullptr) return Status::Ok();
  if (!config->is_object()) return TypeError("output_config", "an object");
  LLMD_ASSIGN_OR_RETURN(auto effort, OptionalString(*config, "effort", "output_config.effort",
                                                    {"low", "medium", "high", "xhigh", "max"}));
  if (effort && *effort != "high") {
    return InvalidArgumentError("'output_config.effort' '" + *effort + "' is not supported by llmd (only high, the "
                                "default; use 'thinking' to switch thinking)");
  }
  if (const json* format = Field(*config, "format")) {
    if (!format->is_object()) return TypeError("output_config.format", "an object");
    LLMD_ASSIGN_OR_RETURN(auto type, OptionalString(*format, "type", "output_config.format.type", {"json_schema"}));
    if (!type) return TypeError("output_config.format.type", "\"json_schema\"");
    const json* schema = Field(*format, "schema");
    if (schema == nullptr || !schema->is_object()) {
      return TypeError("output_config.format.schema", "an object (a JSON schema)");
    }
    r->format.json_schema = schema->dump();
  }
  return Status::Ok();
}

// Fields for things llmd does not have: refused unless they ask for nothing.
Status RefuseUnhonourable(const json& j) {
  if (Field(j, "container") != nullptr) {
    return InvalidArgumentError("'container' is not supported: llmd has no code execution containers");
  }
  if (const json* mcp = Field(j, "mcp_servers"); mcp != nullptr && !(mcp->is_array() && mcp->empty())) {
    return InvalidArgumentError("'mcp_servers' is not supported: llmd connects to no MCP servers (run the tools in "
                                "the client and send them as 'tools')");
  }
  if (Field(j, "context_management") != nullptr) {
    return InvalidArgumentError("'context_management' is not supported by llmd (it does not edit the context)");
  }
  if (Field(j, "diagnostics") != nullptr) {
    return InvalidArgumentError("'diagnostics' is not supported by llmd (no cache-miss reports)");
  }
  if (Field(j, "inference_geo") != nullptr) {
    return InvalidArgumentError("'inference_geo' is not supported: llmd runs on this machine only");
  }
  LLMD_ASSIGN_OR_RETURN(auto speed, OptionalString(j, "speed", "speed", {"standard", "fast"}));
  if (speed == "fast") return InvalidArgumentError("'speed' \"fast\" is not supported by llmd (only standard)");
  LLMD_RETURN_IF_ERROR(CheckCacheControl(j, ""));
  // Labels of the caller: checked and not applied.
  if (const json* metadata = Field(j, "metadata")) {
    if (!metadata->is_object()) return TypeError("metadata", "an object");
    LLMD_RETURN_IF_ERROR(OptionalString(*metadata, "user_id", "metadata.user_id").error());
  }
  LLMD_RETURN_IF_ERROR(OptionalString(j, "user_profile_id", "user_profile_id").error());
  return OptionalString(j, "workspace_id", "workspace_id").error();
}

// ---------------------------------------------------------------------------------------
// Writing the Message.

// A call's id, "toolu_X_N" (X: the message id's suffix, N: the call's index) where the reply has none.
std::string CallId(const MessageContext& ctx, const Block& call) {
  return call.call_id.empty() ? "toolu_" + IdSuffix(ctx.id) + "_" + std::to_string(call.number) : call.call_id;
}

// A call's input: its arguments parsed (the final parse keeps only calls with valid JSON).
ordered Input(const std::string& arguments) {
  ordered input = ordered::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_discarded() ? ordered::object() : input;
}

ordered UsageJson(const engine::GenerationStats& st) {
  ordered usage = {{"input_tokens", st.prompt_tokens - st.cached_tokens},
                   {"cache_creation_input_tokens", 0},
                   {"cache_read_input_tokens", st.cached_tokens},
                   {"output_tokens", st.generated_tokens}};
  // llmd's extension, only where overflow drop_oldest dropped turns to fit the context.
  if (st.dropped_turns > 0) {
    usage["dropped_tokens"] = st.dropped_tokens;
    usage["dropped_turns"] = st.dropped_turns;
  }
  return usage;
}

ordered StopDetails(const MessageEnd& end) {
  if (end.stop_reason != "refusal") return nullptr;
  const std::string& why = end.refusal_explanation;
  return {{"type", "refusal"}, {"category", nullptr},
          {"explanation", why.empty() ? "the guard model judged the answer unsafe" : why}};
}

ordered StopSequence(const MessageEnd& end) {
  return end.stop_sequence ? ordered(*end.stop_sequence) : ordered(nullptr);
}

ordered ThinkingBlock(const std::string& thinking) {
  return {{"type", "thinking"}, {"thinking", thinking}, {"signature", ""}};
}
ordered TextBlockJson(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
ordered ToolUseBlock(const std::string& id, const std::string& name, ordered input) {
  return {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", std::move(input)}};
}

// A content block as the final Message shows it (`whole`), or as content_block_start does,
// before its content.
ordered ContentBlock(const MessageContext& ctx, const Block& block, bool whole) {
  switch (block.kind) {
    case BlockKind::kReasoning:
      return ThinkingBlock(whole && !ctx.omit_thinking ? block.text : "");
    case BlockKind::kText:
      return TextBlockJson(whole ? block.text : "");
    case BlockKind::kToolCall:
      break;
  }
  return ToolUseBlock(CallId(ctx, block), block.name, whole ? Input(block.text) : ordered::object());
}

}  // namespace

Result<AnthropicRequest> ParseAnthropicRequest(std::string_view body, AnthropicBody kind) {
  LLMD_ASSIGN_OR_RETURN(json j, ParseObject(body));
  AnthropicRequest r;
  r.chat = true;
  LLMD_RETURN_IF_ERROR(RefuseUnhonourable(j));
  LLMD_ASSIGN_OR_RETURN(r.request_class, AnthropicRequestClass(j));
  LLMD_RETURN_IF_ERROR(ReadSampling(j, kind, &r));
  Conversation conversation;
  LLMD_RETURN_IF_ERROR(ReadConversation(j, &conversation));
  LLMD_RETURN_IF_ERROR(ReadTools(j, std::move(conversation), &r));
  LLMD_RETURN_IF_ERROR(ReadThinking(j, &r));  // after max_tokens, which it checks
  LLMD_RETURN_IF_ERROR(ReadOutputConfig(j, &r));
  return r;
}

MessageEnd MessageEndFor(const engine::GenerationStats& stats, bool tool_calls, int32_t max_tokens, bool refused,
                         std::optional<std::string> stop_sequence) {
  MessageEnd end;
  end.stats = stats;
  if (refused) {
    end.stop_reason = "refusal";
  } else if (tool_calls) {
    end.stop_reason = "tool_use";
  } else if (stop_sequence) {
    end.stop_reason = "stop_sequence";
    end.stop_sequence = std::move(stop_sequence);
  } else if (stats.finish_reason == engine::FinishReason::kLength) {
    // Cut before its own limit: the context ran out.
    end.stop_reason = stats.generated_tokens < max_tokens ? "model_context_window_exceeded" : "max_tokens";
  } else {
    end.stop_reason = "end_turn";
  }
  return end;
}

std::string RenderMessage(const MessageContext& ctx, const engine::ParsedReply& reply, const MessageEnd& end) {
  ordered content = ordered::array();
  const BlockStream blocks = WholeReply(reply);
  for (const Block& block : blocks.blocks()) content.push_back(ContentBlock(ctx, block, true));
  ordered m = {{"id", ctx.id},
               {"type", "message"},
               {"role", "assistant"},
               {"model", ctx.model},
               {"content", std::move(content)},
               {"stop_reason", end.stop_reason},
               {"stop_sequence", StopSequence(end)},
               {"stop_details", StopDetails(end)},
               {"usage", UsageJson(end.stats)}};
  return DumpOrdered(m);
}

std::string RenderTokenCount(int32_t input_tokens) { return DumpOrdered(ordered{{"input_tokens", input_tokens}}); }

// ---------------------------------------------------------------------------------------
// Streaming.

// Anthropic's names for the block life (block_stream.h). content_block_stop carries no
// content, as in Anthropic's API: the client built the block from its deltas, so what a call
// receives after its stop (the block stream still records it) is in no event.
struct AnthropicStream::State : ReplyStream {
  explicit State(MessageContext c) : ctx(std::move(c)) {}

  MessageContext ctx;

  void Emit(const char* type, ordered fields) {
    ordered data = {{"type", type}};
    for (auto& [key, value] : fields.items()) data[key] = std::move(value);
    Add(type, DumpOrdered(data));
  }

  void Started() override {
    // The prompt's counts come with message_delta: nothing is known of them yet.
    ordered message = {{"id", ctx.id},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", ctx.model},
                       {"content", ordered::array()},
                       {"stop_reason", nullptr},
                       {"stop_sequence", nullptr},
                       {"stop_details", nullptr},
                       {"usage", UsageJson({})}};
    Emit("message_start", {{"message", std::move(message)}});
  }

  void Opened(size_t index, const Block& block) override {
    Emit("content_block_start", {{"index", index}, {"content_block", ContentBlock(ctx, block, false)}});
  }

  void Appended(size_t index, const Block& block, const std::string& piece) override {
    ordered delta;
    switch (block.kind) {
      case BlockKind::kReasoning:
        if (ctx.omit_thinking) return;  // the block still opens and closes, signed
        delta = {{"type", "thinking_delta"}, {"thinking", piece}};
        break;
      case BlockKind::kText:
        delta = {{"type", "text_delta"}, {"text", piece}};
        break;
      case BlockKind::kToolCall:
        delta = {{"type", "input_json_delta"}, {"partial_json", piece}};
        break;
    }
    Emit("content_block_delta", {{"index", index}, {"delta", std::move(delta)}});
  }

  void Closed(size_t index, const Block& block) override {
    // Anthropic closes a thinking block with its signature; llmd signs nothing.
    if (block.kind == BlockKind::kReasoning) {
      Emit("content_block_delta", {{"index", index}, {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
    }
    Emit("content_block_stop", {{"index", index}});
  }

  std::vector<SseEvent> Finish(const engine::ParsedReply& reply, const MessageEnd& end) {
    if (!CatchUp(reply)) return {};
    blocks_.Close(*this);
    End();
    Emit("message_delta", {{"delta", {{"stop_reason", end.stop_reason},
                                      {"stop_sequence", StopSequence(end)},
                                      {"stop_details", StopDetails(end)}}},
                           {"usage", UsageJson(end.stats)}});
    Emit("message_stop", ordered::object());
    return Take();
  }

  std::vector<SseEvent> Fail(const ApiError& error) {
    if (ended()) return {};
    End();
    Add("error", AnthropicErrorBody(error));
    return Take();
  }
};

AnthropicStream::AnthropicStream(MessageContext ctx) : state_(std::make_unique<State>(std::move(ctx))) {}
AnthropicStream::AnthropicStream(AnthropicStream&&) noexcept = default;
AnthropicStream& AnthropicStream::operator=(AnthropicStream&&) noexcept = default;
AnthropicStream::~AnthropicStream() = default;

std::vector<SseEvent> AnthropicStream::Begin() { return state_->Begin(); }

std::vector<SseEvent> AnthropicStream::Next(const ReplyDelta& delta) { return state_->Next(delta); }

std::vector<SseEvent> AnthropicStream::Finish(const engine::ParsedReply& reply, const MessageEnd& end) {
  return state_->Finish(reply, end);
}

std::vector<SseEvent> AnthropicStream::Fail(const ApiError& error) { return state_->Fail(error); }

namespace {

// Anthropic's error types by HTTP status (its documented set).
const char* AnthropicType(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return "api_error";
  }
}

}  // namespace

std::string AnthropicErrorBody(const ApiError& e) {
  return Dump(nlohmann::json{{"type", "error"}, {"error", {{"type", AnthropicType(e.status)}, {"message", e.message}}}});
}

}  // namespace llmd::http
