// Whether a manifest's TEMPLATE is a chat template llmd can render as written.
//
// llmd renders chat templates with llama.cpp's Jinja engine, the syntax of a GGUF's own
// tokenizer.chat_template (and of llama-server's --chat-template). Ollama's TEMPLATE is a Go
// text/template ({{ .Prompt }}, {{ if .System }}, {{ range .Messages }}) over Ollama's own
// variables, which no Jinja engine reads the same way: rendering one would give the model a
// prompt the manifest never meant. So a Go template is refused, with the reason and what to
// give instead, rather than rendered as something else or silently dropped. Whether a Jinja
// template parses and renders is checked when the model loads (the engine's parser).
//
// Thread-safety: pure functions.
#ifndef LLMD_MODELS_CHAT_TEMPLATE_SYNTAX_H_
#define LLMD_MODELS_CHAT_TEMPLATE_SYNTAX_H_

#include <string_view>

#include "llmd/result.h"

namespace llmd::models {

// InvalidArgument, starting "TEMPLATE ", when `text` is empty or holds a Go template action:
// `{{` (or `{{-`) followed by a field or variable (`.Prompt`, `.`, `$x`), a Go keyword that
// opens or closes a block (`if`, `range`, `with`, `else`, `end`, `define`, `template`,
// `block`, `break`, `continue`) or a comment (`/*`). Jinja's `{{ ... }}` holds expressions,
// none of which starts so; its blocks are `{% ... %}`.
Status CheckChatTemplate(std::string_view text);

}  // namespace llmd::models

#endif  // LLMD_MODELS_CHAT_TEMPLATE_SYNTAX_H_
