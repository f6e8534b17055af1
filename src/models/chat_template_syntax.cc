#include "models/chat_template_syntax.h"

#include <algorithm>
#include <string>

namespace llmd::models {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Go's actions that no Jinja expression starts with. A keyword counts only as a whole word
// followed by a space, '}' or '-' (Jinja's range(...) is a call, not Go's range), and not as
// the operand of a Jinja operator or filter (`{{ block | upper }}` is a variable named block).
constexpr std::string_view kGoKeywords[] = {"if",     "range",    "with",  "else",  "end",
                                            "define", "template", "block", "break", "continue"};

// Whether the action that starts at `action` (the text after "{{") is Go's.
bool IsGoAction(std::string_view action) {
  size_t i = 0;
  if (i < action.size() && action[i] == '-') ++i;  // {{- trims the space before it
  while (i < action.size() && IsSpace(action[i])) ++i;
  std::string_view rest = action.substr(i);
  if (rest.empty()) return false;
  if (rest.front() == '.' || rest.front() == '$' || rest.starts_with("/*")) return true;
  size_t word = 0;
  while (word < rest.size() && IsWordChar(rest[word])) ++word;
  const bool ends = word == rest.size() || IsSpace(rest[word]) || rest[word] == '}' || rest[word] == '-';
  size_t next = word;
  while (next < rest.size() && IsSpace(rest[next])) ++next;
  if (next < rest.size() && std::string_view("|[~+*/%=!<>,)").find(rest[next]) != std::string_view::npos) return false;
  for (std::string_view keyword : kGoKeywords) {
    if (ends && rest.substr(0, word) == keyword) return true;
  }
  return false;
}

}  // namespace

Status CheckChatTemplate(std::string_view text) {
  if (text.empty()) {
    return InvalidArgumentError("TEMPLATE is empty; leave it out to use the chat template in the GGUF");
  }
  for (size_t at = text.find("{{"); at != std::string_view::npos; at = text.find("{{", at + 2)) {
    if (!IsGoAction(text.substr(at + 2))) continue;
    // The action as written, "{{" to "}}", cut short if it runs on.
    constexpr size_t kShown = 48;
    const size_t close = text.find("}}", at);
    std::string shown(text.substr(at, close == std::string_view::npos ? kShown : std::min(kShown, close + 2 - at)));
    if (close == std::string_view::npos || close + 2 - at > kShown) shown += "...";
    return InvalidArgumentError(
        "TEMPLATE is a Go template, Ollama's syntax ('" + shown + "' at byte " + std::to_string(at) +
        "), which llmd cannot render as written: llmd renders chat templates with Jinja, as a GGUF's own "
        "tokenizer.chat_template is written; give a Jinja template (the model's chat_template, as "
        "llama-server's --chat-template takes it), or leave TEMPLATE out to use the one in the GGUF");
  }
  return Status::Ok();
}

}  // namespace llmd::models
