#include "engine/llama/llama_reply_parser.h"

#include <cctype>
#include <exception>
#include <string>

#include "chat.h"

namespace llmd::engine {
namespace {

class LlamaReplyParser final : public ReplyParser {
 public:
  LlamaReplyParser(const common_chat_params& params, bool parse_tools) : params_(params) {
    params_.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;  // the think block apart
    params_.parse_tool_calls = parse_tools;
    if (!params.parser.empty()) params_.parser.load(params.parser);
  }

  ParsedReply Parse(std::string_view text, bool partial) const override {
    ParsedReply reply;
    try {
      common_chat_msg msg = common_chat_parse(std::string(text), partial, params_);
      reply.content = std::move(msg.content);
      reply.reasoning_content = std::move(msg.reasoning_content);
      // The newline before "</think>" is layout, not reasoning.
      while (!reply.reasoning_content.empty() && std::isspace(static_cast<unsigned char>(reply.reasoning_content.back()))) {
        reply.reasoning_content.pop_back();
      }
      for (auto& call : msg.tool_calls) {
        reply.tool_calls.push_back({std::move(call.id), std::move(call.name), std::move(call.arguments)});
      }
    } catch (const std::exception&) {
      // Text that does not follow the format (a malformed call, say) is the answer as it
      // is; while streaming, it may still become well-formed, so nothing is told yet.
      if (!partial) reply.content = std::string(text);
    }
    return reply;
  }

 private:
  common_chat_parser_params params_;
};

}  // namespace

std::shared_ptr<const ReplyParser> NewLlamaReplyParser(const common_chat_params& params, bool parse_tools) {
  return std::make_shared<LlamaReplyParser>(params, parse_tools);
}

}  // namespace llmd::engine
