#include "http/chat_surface.h"

#include <algorithm>
#include <map>
#include <set>

#include "http/api_text.h"
#include "http/json_fields.h"  // TypeError

namespace llmd::http {
namespace {

// Unique names (a template cannot show two functions of one name, nor a call say which it
// meant), and a choice that asks for a call has a tool to call.
Status CheckTools(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                  const ChatDialect& d) {
  std::set<std::string> names;
  for (const ToolSpec& t : tools) {
    if (!names.insert(t.name).second) {
      return InvalidArgumentError(Quoted(t.field + ".name") + " '" + t.name + "' is used twice");
    }
  }
  const bool asks_for_call =
      choice.mode == engine::ToolChoice::kRequired || choice.mode == engine::ToolChoice::kNamed;
  if (asks_for_call && tools.empty()) {
    return InvalidArgumentError("'tool_choice' asks for a tool call, but 'tools' is empty")
        .WithReason(ErrorReason::kToolNotOffered);
  }
  // Refused here rather than left to the chat template, which would fail later and vaguely.
  if (choice.mode == engine::ToolChoice::kNamed && names.count(choice.name) == 0) {
    return InvalidArgumentError(Quoted(d.choice_name) + " '" + choice.name + "' is not in 'tools'")
        .WithReason(ErrorReason::kToolNotOffered);
  }
  return Status::Ok();
}

Status CheckRole(const chat::Message& m, const std::string& field, const ChatDialect& d) {
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  if (std::none_of(std::begin(kRoles), std::end(kRoles),
                   [&](const char* r) { return m.role == r; })) {
    return InvalidArgumentError(Quoted(field + ".role") + " must be " + d.roles + " (got '" +
                                m.role + "')");
  }
  if (!m.tool_calls.empty() && m.role != "assistant") {
    return InvalidArgumentError(Quoted(field + ".tool_calls") + " is only for assistant messages");
  }
  return Status::Ok();
}

// The calls of a conversation in order, and which of them a result has answered. A template
// renders a result next to the call it answers; one that answers nothing, or a call left
// without its result, gives the model a history it was never trained on.
class CallLedger {
 public:
  explicit CallLedger(const ChatDialect& d) : d_(d) {}

  Status Call(const chat::ToolCall& call, const std::string& field) {
    const std::string at = field + "." + d_.call_id;
    if (call.id.empty()) return TypeError(at, "a non-empty string");
    if (!answered_.emplace(call.id, false).second) {
      return InvalidArgumentError(Quoted(at) + " '" + call.id + "' is used by an earlier " +
                                  d_.call);
    }
    order_.push_back(call.id);
    return Status::Ok();
  }

  Status Result(const std::string& id, const std::string& field) {
    auto it = answered_.find(id);
    const std::string at =
        id.empty() ? Quoted(field) : Quoted(field + "." + d_.result_id) + " '" + id + "'";
    if (it == answered_.end())
      return InvalidArgumentError(at + " answers no " + d_.call + " before it");
    if (it->second) return InvalidArgumentError(at + " was answered already");
    it->second = true;
    return Status::Ok();
  }

  Status Finish() const {
    for (const std::string& id : order_) {
      if (answered_.at(id)) continue;
      return InvalidArgumentError(Quoted(d_.list) + " has a " + d_.call + " with " + d_.call_id +
                                  " '" + id + "' but no " + d_.result + " for it");
    }
    return Status::Ok();
  }

 private:
  const ChatDialect& d_;
  std::map<std::string, bool> answered_;  // call id -> answered
  std::vector<std::string> order_;        // call ids as they came
};

std::string MessageField(const ChatDialect& d, const std::vector<MessageOrigin>& origins,
                         size_t i) {
  if (i < origins.size()) return origins[i].field;
  return std::string(d.list) + "[" + std::to_string(i) + "]";
}

std::string CallField(const ChatDialect& d, const std::vector<MessageOrigin>& origins, size_t i,
                      size_t k) {
  if (i < origins.size() && k < origins[i].calls.size()) return origins[i].calls[k];
  return MessageField(d, origins, i) + ".tool_calls[" + std::to_string(k) + "]";
}

}  // namespace

void Conversation::Add(chat::Message message, std::string field) {
  messages.push_back(std::move(message));
  origins.push_back({std::move(field), {}});
}

void Conversation::AddCall(chat::ToolCall call, std::string field) {
  if (messages.empty() || messages.back().role != "assistant") Add({"assistant", ""}, field);
  messages.back().tool_calls.push_back(std::move(call));
  origins.back().calls.push_back(std::move(field));
}

Status ValidateConversation(const std::vector<chat::Message>& messages,
                            const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                            const ChatDialect& dialect, const std::vector<MessageOrigin>& origins) {
  LLMD_RETURN_IF_ERROR(CheckTools(tools, choice, dialect));
  CallLedger ledger(dialect);
  bool user_turn = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const chat::Message& m = messages[i];
    const std::string field = MessageField(dialect, origins, i);
    LLMD_RETURN_IF_ERROR(CheckRole(m, field, dialect));
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
      LLMD_RETURN_IF_ERROR(ledger.Call(m.tool_calls[k], CallField(dialect, origins, i, k)));
    }
    if (m.role == "tool") LLMD_RETURN_IF_ERROR(ledger.Result(m.tool_call_id, field));
    user_turn = user_turn || m.role == "user" || m.role == "tool";
  }
  LLMD_RETURN_IF_ERROR(ledger.Finish());
  if (dialect.needs_user_turn && !user_turn)
    return InvalidArgumentError(Quoted(dialect.list) + " must have a user turn");
  if (!messages.empty() && messages.back().role == "assistant") {
    return InvalidArgumentError(
        "the last message must not be the assistant's (llmd does not continue a reply)");
  }
  return Status::Ok();
}

void ApplyTools(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                engine::ChatFormat* format) {
  format->tools.assign(tools.begin(), tools.end());  // the ChatTool part of each
  format->tool_choice = choice.mode;
  format->tool_name = choice.name;
}

}  // namespace llmd::http
