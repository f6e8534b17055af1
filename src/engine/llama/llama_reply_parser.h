// LlamaReplyParser: a structured chat's reply parser over llama.cpp's common_chat_parse (the
// template's own tool-call format and think block), from the plan common_chat_templates_apply
// made for the prompt. Hidden behind engine::ReplyParser so nothing past src/engine/llama
// sees llama.cpp's types.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_REPLY_PARSER_H_
#define LLMD_ENGINE_LLAMA_LLAMA_REPLY_PARSER_H_

#include <memory>

#include "engine/types.h"

struct common_chat_params;

namespace llmd::engine {

// `parse_tools`: tool calls are taken out of the text (false for tool_choice "none").
std::shared_ptr<const ReplyParser> NewLlamaReplyParser(const common_chat_params& params, bool parse_tools);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_REPLY_PARSER_H_
