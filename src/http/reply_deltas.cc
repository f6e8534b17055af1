#include "http/reply_deltas.h"

#include "http/api_text.h"

namespace llmd::http {

ReplyDelta ReplyDeltas::Next(const engine::ParsedReply& now, bool final) {
  ReplyDelta d;
  d.reasoning_content = Extension(reasoning_, now.reasoning_content);
  reasoning_ += d.reasoning_content;
  d.content = Extension(content_, now.content);
  content_ += d.content;
  for (size_t i = 0; i < now.tool_calls.size(); ++i) {
    const chat::ToolCall& call = now.tool_calls[i];
    // A call's name is whole once its arguments begin (a partial parse may show half a
    // name before): until then it, and the calls after it, wait.
    if (call.name.empty() || (i >= names_.size() && call.arguments.empty() && !final)) break;
    ToolCallDelta t;
    t.index = i;
    if (i >= names_.size()) {  // its first delta
      if (i >= ids_.size()) ids_.push_back(call.id.empty() ? new_id_() : call.id);
      names_.push_back(call.name);
      arguments_.emplace_back();
      t.id = ids_[i];
      t.name = call.name;
    }
    t.arguments = Extension(arguments_[i], call.arguments);
    arguments_[i] += t.arguments;
    if (!t.id.empty() || !t.arguments.empty()) d.tool_calls.push_back(std::move(t));
  }
  return d;
}

engine::ParsedReply ReplyDeltas::WithIds(engine::ParsedReply reply) {
  for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
    if (i >= ids_.size()) ids_.push_back(reply.tool_calls[i].id.empty() ? new_id_() : reply.tool_calls[i].id);
    reply.tool_calls[i].id = ids_[i];
  }
  return reply;
}

}  // namespace llmd::http
