// ToyReplyParser: a reply format for tests of what streams a structured reply, with no engine:
// "<think>...</think>", then content, then "<tool_call>{args}</tool_call>" (a call to "f"); a
// partial parse holds back an unfinished "<tool_call>" and an open call. Test-only.
#ifndef LLMD_HTTP_TOY_REPLY_PARSER_H_
#define LLMD_HTTP_TOY_REPLY_PARSER_H_

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/types.h"

namespace llmd::http {

class ToyReplyParser final : public engine::ReplyParser {
 public:
  engine::ParsedReply Parse(std::string_view text, bool partial) const override {
    engine::ParsedReply r;
    std::string t(text);
    if (t.starts_with("<think>")) {
      const size_t end = t.find("</think>");
      if (end == std::string::npos) {
        r.reasoning_content = t.substr(7);
        return r;
      }
      r.reasoning_content = t.substr(7, end - 7);
      t = t.substr(end + 8);
    }
    const std::string open = "<tool_call>", close = "</tool_call>";
    const size_t call = t.find(open);
    if (call == std::string::npos) {
      size_t keep = t.size();
      for (size_t n = std::min(t.size(), open.size() - 1); partial && n > 0; --n) {
        if (t.compare(t.size() - n, n, open, 0, n) == 0) {
          keep = t.size() - n;
          break;
        }
      }
      r.content = t.substr(0, keep);
      return r;
    }
    r.content = t.substr(0, call);
    const size_t end = t.find(close, call);
    if (end != std::string::npos) {
      r.tool_calls.push_back({"", "f", t.substr(call + open.size(), end - call - open.size())});
    }
    return r;
  }
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_TOY_REPLY_PARSER_H_
