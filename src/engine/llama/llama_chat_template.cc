#include "engine/llama/llama_chat_template.h"

#include <exception>
#include <string>
#include <vector>

#include "chat.h"

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

}  // namespace

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

chat::PromptPieces ChatTemplate::Conversation(const std::vector<chat::Message>& messages,
                                              bool enable_thinking) const {
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
