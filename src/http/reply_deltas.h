// ReplyDeltas: what a streamed structured reply adds at each step. The reply's parser turns
// the text generated so far into a ParsedReply (content, reasoning, tool calls); this turns
// successive parses into the pieces a stream sends: new reasoning text, new content text,
// and per tool call its id and name once, then fragments of its arguments.
//
// A partial parse can hold text back (a "<tool_call>" not yet complete) and release it later;
// text already sent is never taken back. Tool-call ids are made here, once per call, so the
// stream and the final message agree.
#ifndef LLMD_HTTP_REPLY_DELTAS_H_
#define LLMD_HTTP_REPLY_DELTAS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "engine/types.h"

namespace llmd::http {

struct ToolCallDelta {
  size_t index = 0;
  std::string id, name;  // set in the first delta of a call only
  std::string arguments;
};

struct ReplyDelta {
  std::string reasoning_content;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning_content.empty() && content.empty() && tool_calls.empty(); }
};

class ReplyDeltas {
 public:
  // `new_id` names each new tool call ("call_..."); called once per call.
  explicit ReplyDeltas(std::function<std::string()> new_id) : new_id_(std::move(new_id)) {}

  // The delta from the last snapshot to `now` (a parse of all the text so far). A call is
  // first sent once its arguments begin (its name is whole then), or when `final` (the
  // parse of the finished reply).
  ReplyDelta Next(const engine::ParsedReply& now, bool final = false);
  // The ids given so far, by call index.
  const std::vector<std::string>& ids() const { return ids_; }
  // `reply` with the ids given here (new ones made for calls not yet seen).
  engine::ParsedReply WithIds(engine::ParsedReply reply);

 private:
  std::function<std::string()> new_id_;
  std::string content_, reasoning_;  // sent so far
  std::vector<std::string> ids_;
  std::vector<std::string> names_, arguments_;  // per call: sent so far
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_REPLY_DELTAS_H_
