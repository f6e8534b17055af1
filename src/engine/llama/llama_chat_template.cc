#include "engine/llama/llama_chat_template.h"

#include <exception>
#include <regex>
#include <string>
#include <vector>

#include "chat.h"
#include "common.h"
#include "engine/llama/llama_reply_parser.h"

namespace llmd::engine {
namespace {

// Stand-ins rendered in place of message text, then swapped back as user pieces. Printable
// and unlikely in any template, so no template transforms them.
std::string Marker(int i) { return "[[llmd-message-" + std::to_string(i) + "-7f3a9c]]"; }

common_chat_msg Msg(const char* role, std::string content) {
  common_chat_msg m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

std::string Render(const common_chat_templates* t, std::vector<common_chat_msg> msgs,
                   bool enable_thinking = false) {
  common_chat_templates_inputs in;
  in.messages = std::move(msgs);
  in.add_generation_prompt = true;
  in.use_jinja = true;
  in.enable_thinking = enable_thinking;
  in.chat_template_kwargs["enable_thinking"] = enable_thinking ? "true" : "false";
  return common_chat_templates_apply(t, in).prompt;
}

// A lazy grammar's triggers as the sampler takes them: regexes over the text, and tokens
// (as llama.cpp's common_sampler_init converts them).
void AddTriggers(const std::vector<common_grammar_trigger>& triggers, ChatPlan* plan) {
  for (const auto& t : triggers) {
    switch (t.type) {
      case COMMON_GRAMMAR_TRIGGER_TYPE_WORD:
        plan->grammar_trigger_patterns.push_back(regex_escape(t.value));
        break;
      case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN:
        plan->grammar_trigger_patterns.push_back(t.value);
        break;
      case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: {
        std::string anchored = t.value;
        if (anchored.empty() || anchored.front() != '^') anchored.insert(0, "^");
        if (anchored.back() != '$') anchored += "$";
        plan->grammar_trigger_patterns.push_back(anchored);
        break;
      }
      case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN:
        plan->grammar_trigger_tokens.push_back(t.token);
        break;
    }
  }
}

// A tool call that must come (tool_choice "required" or named) comes at once: the template's
// grammar lets free text ("until-N" rules) precede the calls, which a weak model fills with
// whitespace until it runs out of tokens. Those references go from the root rule, except
// inside groups (the think block, which thinking may fill). True when the root rule was found.
bool RemoveTextBeforeCalls(std::string* grammar) {
  const size_t root = grammar->starts_with("root ::= ") ? 0 : grammar->find("\nroot ::= ");
  if (root == std::string::npos) return false;
  const size_t begin = root == 0 ? 0 : root + 1;
  size_t end = grammar->find('\n', begin);
  if (end == std::string::npos) end = grammar->size();
  std::string rule = grammar->substr(begin, end - begin);
  std::string out;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < rule.size(); ++i) {
    const char c = rule[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < rule.size()) out += rule[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && rule.compare(i, 6, "until-") == 0 && (i == 0 || rule[i - 1] == ' ')) {
      size_t j = i + 6;
      while (j < rule.size() && (std::isalnum(static_cast<unsigned char>(rule[j])) || rule[j] == '-')) ++j;
      if (j < rule.size() && (rule[j] == '?' || rule[j] == '*')) ++j;
      i = j;  // the space after it goes too
      continue;
    }
    out += c;
  }
  grammar->replace(begin, end - begin, out);
  return true;
}

// One call at most (parallel_tool_calls false): some templates' grammars repeat the call rule
// whatever the setting (Qwen3's "(tool-call space)+").
void AllowOneCall(std::string* grammar) {
  const std::string repeated = "\ntool-calls ::= (tool-call space)+";
  if (size_t at = grammar->find(repeated); at != std::string::npos) {
    grammar->replace(at, repeated.size(), "\ntool-calls ::= tool-call space");
  }
}

// The tools as llama.cpp's templates take them. A tool without a schema gets an empty one,
// "{}", as llama.cpp gives one whose "parameters" the request left out
// (common_chat_tools_parse_oaicompat): the template parses the text back to show it, and the
// call grammar reads an empty schema as an object with no properties.
std::vector<common_chat_tool> ToolsOf(const std::vector<ChatTool>& tools) {
  std::vector<common_chat_tool> out;
  out.reserve(tools.size());
  for (const ChatTool& t : tools) {
    out.push_back({.name = t.name,
                   .description = t.description,
                   .parameters = t.parameters.empty() ? "{}" : t.parameters});
  }
  return out;
}

common_chat_tool_choice ToolChoiceOf(ToolChoice choice) {
  switch (choice) {
    case ToolChoice::kNone: return COMMON_CHAT_TOOL_CHOICE_NONE;
    case ToolChoice::kRequired:
    case ToolChoice::kNamed: return COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    case ToolChoice::kAuto: break;
  }
  return COMMON_CHAT_TOOL_CHOICE_AUTO;
}

}  // namespace

Result<ChatTemplate::Structured> ChatTemplate::StructuredConversation(const std::vector<chat::Message>& messages,
                                                                      const ChatFormat& format) const {
  if (!from_model_) {
    return InvalidArgumentError("this model has no chat template of its own, so it cannot call tools, follow a "
                                "schema through its template or think");
  }
  if (!format.tools.empty()) {
    const auto caps = common_chat_templates_get_caps(templates_.get());
    auto has = [&](const char* cap) {
      auto it = caps.find(cap);
      return it != caps.end() && it->second;
    };
    if (!has("supports_tools") || !has("supports_tool_calls")) {
      return InvalidArgumentError("this model's chat template cannot call tools");
    }
  }
  common_chat_templates_inputs in;
  std::vector<std::string> markers;
  std::vector<std::string_view> values;
  for (size_t i = 0; i < messages.size(); ++i) {
    const chat::Message& m = messages[i];
    common_chat_msg msg;
    msg.role = m.role;
    markers.push_back(Marker(static_cast<int>(i)));
    values.push_back(m.content);
    msg.content = markers.back();
    for (const auto& call : m.tool_calls) msg.tool_calls.push_back({call.name, call.arguments, call.id});
    msg.tool_call_id = m.tool_call_id;
    if (m.role == "tool") {
      // Some templates name the function a result comes from: the call it answers says.
      for (size_t j = i; j-- > 0 && msg.tool_name.empty();) {
        for (const auto& call : messages[j].tool_calls) {
          if (call.id == m.tool_call_id) msg.tool_name = call.name;
        }
      }
    }
    in.messages.push_back(std::move(msg));
  }
  in.add_generation_prompt = true;
  in.use_jinja = true;
  in.enable_thinking = format.enable_thinking;
  in.chat_template_kwargs["enable_thinking"] = format.enable_thinking ? "true" : "false";
  in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
  in.json_schema = format.json_schema;
  in.parallel_tool_calls = format.parallel_tool_calls;
  in.tool_choice = ToolChoiceOf(format.tool_choice);
  in.tools = ToolsOf(format.tools);
  Structured out;
  try {
    common_chat_params params = common_chat_templates_apply(templates_.get(), in);
    if (format.tool_choice == ToolChoice::kNamed) {
      // The prompt shows every tool; the grammar and parser allow only the named one.
      std::erase_if(in.tools, [&](const common_chat_tool& t) { return t.name != format.tool_name; });
      if (in.tools.empty()) return InvalidArgumentError("tool_choice names '" + format.tool_name + "', which is not in tools");
      common_chat_params named = common_chat_templates_apply(templates_.get(), in);
      named.prompt = std::move(params.prompt);
      params = std::move(named);
    }
    LLMD_ASSIGN_OR_RETURN(out.pieces, chat::SplitAtMarkers(params.prompt, markers, values));
    ChatPlan& plan = out.plan;
    plan.grammar = params.grammar;
    plan.grammar_lazy = params.grammar_lazy;
    if (!plan.grammar.empty() && format.tool_choice != ToolChoice::kAuto && format.tool_choice != ToolChoice::kNone &&
        !format.tools.empty()) {
      RemoveTextBeforeCalls(&plan.grammar);
    }
    if (!format.parallel_tool_calls || format.tool_choice == ToolChoice::kNamed) AllowOneCall(&plan.grammar);
    AddTriggers(params.grammar_triggers, &plan);
    // The template's grammars start with the generation prompt already in the prompt (a lazy
    // one starts at its trigger instead).
    if (!plan.grammar.empty() && !plan.grammar_lazy) plan.grammar_prefill = params.generation_prompt;
    plan.stops = params.additional_stops;
    plan.parser = NewLlamaReplyParser(params, format.tool_choice != ToolChoice::kNone);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("the tools or schema cannot be used with this model's template: ") + e.what());
  }
  return out;
}

void ChatTemplate::Deleter::operator()(common_chat_templates* t) const {
  common_chat_templates_free(t);
}

ChatTemplate::ChatTemplate(const llama_model* model) {
  try {
    templates_.reset(common_chat_templates_init(model, "").release());
    from_model_ = templates_ && common_chat_templates_was_explicit(templates_.get());
  } catch (const std::exception&) {
    templates_.reset();  // an unparsable template: ChatML below
  }
}

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::Create(const llama_model* model, const std::string& replacement) {
  if (replacement.empty()) return std::make_unique<ChatTemplate>(model);
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  try {
    t->templates_.reset(common_chat_templates_init(model, replacement).release());
    // One that parses may still fail on every conversation (raise_exception, a missing
    // variable): found now, not on a client's first request.
    Render(t->templates_.get(), {Msg("user", "Hello")});
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("the chat template that replaces the model's (TEMPLATE) cannot be used: ") +
                                e.what());
  }
  t->from_model_ = true;
  return t;
}

ChatTemplate::~ChatTemplate() = default;

chat::PromptPieces ChatTemplate::FirstTurn(std::string_view system, std::string_view user) const {
  if (from_model_) {
    try {
      std::vector<common_chat_msg> msgs;
      std::vector<std::string> markers;
      std::vector<std::string_view> values;
      if (!system.empty()) {
        markers.push_back(Marker(0));
        values.push_back(system);
        msgs.push_back(Msg("system", markers.back()));
      }
      markers.push_back(Marker(1));
      values.push_back(user);
      msgs.push_back(Msg("user", markers.back()));
      auto pieces = chat::SplitAtMarkers(Render(templates_.get(), msgs), markers, values);
      if (pieces.has_value()) return *pieces;
    } catch (const std::exception&) {
    }
  }
  return chat::ChatMlFirstTurn(system, user);
}

chat::PromptPieces ChatTemplate::NextTurn(std::string_view system, std::string_view user) const {
  if (from_model_) {
    try {
      // Render a two-turn chat and keep what follows the first reply.
      std::vector<common_chat_msg> msgs;
      if (!system.empty()) msgs.push_back(Msg("system", Marker(0)));
      msgs.push_back(Msg("user", Marker(1)));
      msgs.push_back(Msg("assistant", Marker(2)));
      msgs.push_back(Msg("user", Marker(3)));
      std::string rendered = Render(templates_.get(), msgs);
      size_t reply = rendered.find(Marker(2));
      if (reply != std::string::npos) {
        auto pieces = chat::SplitAtMarkers(
            std::string_view(rendered).substr(reply + Marker(2).size()), {Marker(3)}, {user});
        if (pieces.has_value()) return *pieces;
      }
    } catch (const std::exception&) {
    }
  }
  return chat::ChatMlNextTurn(user);
}

chat::PromptPieces ChatTemplate::Conversation(const std::vector<chat::Message>& messages) const {
  const bool enable_thinking = false;
  if (from_model_) {
    try {
      std::vector<common_chat_msg> msgs;
      std::vector<std::string> markers;
      std::vector<std::string_view> values;
      for (size_t i = 0; i < messages.size(); ++i) {
        markers.push_back(Marker(static_cast<int>(i)));
        values.push_back(messages[i].content);
        msgs.push_back(Msg(messages[i].role.c_str(), markers.back()));
      }
      auto pieces = chat::SplitAtMarkers(Render(templates_.get(), msgs, enable_thinking), markers, values);
      if (pieces.has_value()) return *pieces;
    } catch (const std::exception&) {
    }
  }
  return chat::ChatMlConversation(messages, enable_thinking);
}

}  // namespace llmd::engine
