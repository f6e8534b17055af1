// ChatTemplate: renders chat turns with the model's own template through llama.cpp's template
// engine (common_chat_templates_apply), thinking off, into PromptPieces that keep user text
// apart from template text. Falls back to ChatML when the model has no template or its
// template cannot render a turn.
//
// Thread-safety: const methods may run concurrently. Lifetime: `model` must outlive this.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_CHAT_TEMPLATE_H_
#define LLMD_ENGINE_LLAMA_LLAMA_CHAT_TEMPLATE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/engine.h"
#include "llmd/result.h"

struct llama_model;
struct common_chat_templates;

namespace llmd::engine {

class ChatTemplate {
 public:
  // The model's own template (ChatML when it has none, or one that does not parse).
  explicit ChatTemplate(const llama_model* model);
  // `replacement` (Jinja, as a GGUF's tokenizer.chat_template is written: a manifest's
  // TEMPLATE, llama-server's --chat-template) in place of the model's own; the model's when
  // empty. InvalidArgument when it does not parse or cannot render a user's turn: a template
  // someone chose is never swapped for ChatML behind their back.
  static Result<std::unique_ptr<ChatTemplate>> Create(const llama_model* model, const std::string& replacement);
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // True when the model file carries its own template, or it was replaced (else ChatML is used).
  bool from_model() const { return from_model_; }

  // The whole prompt of a first turn, ending with the assistant's generation prompt.
  chat::PromptPieces FirstTurn(std::string_view system, std::string_view user) const;
  // What follows a generated reply to start the next turn: the reply's closing text, the new
  // user message and the generation prompt.
  chat::PromptPieces NextTurn(std::string_view system, std::string_view user) const;
  // A whole conversation (OpenAI messages), ending with the generation prompt, thinking off.
  chat::PromptPieces Conversation(const std::vector<chat::Message>& messages) const;

  // A conversation shaped by `format` (tools, schema, thinking): its pieces and what the reply
  // must follow (plan.prompt is left empty for the caller to tokenize the pieces into).
  // InvalidArgument when the template cannot call tools, or the tools or schema are invalid.
  struct Structured {
    chat::PromptPieces pieces;
    ChatPlan plan;
  };
  Result<Structured> StructuredConversation(const std::vector<chat::Message>& messages, const ChatFormat& format) const;

 private:
  ChatTemplate() = default;
  struct Deleter {
    void operator()(common_chat_templates* t) const;
  };
  std::unique_ptr<common_chat_templates, Deleter> templates_;
  bool from_model_ = false;
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_CHAT_TEMPLATE_H_
