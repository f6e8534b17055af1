#include "chat/prompt_pieces.h"

namespace llmd::chat {
namespace {
constexpr std::string_view kAssistantOpen = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
}  // namespace

Result<PromptPieces> SplitAtMarkers(std::string_view rendered,
                                    const std::vector<std::string>& markers,
                                    const std::vector<std::string_view>& values) {
  PromptPieces pieces;
  size_t pos = 0;
  for (size_t i = 0; i < markers.size(); ++i) {
    size_t at = rendered.find(markers[i], pos);
    if (at == std::string_view::npos ||
        rendered.find(markers[i], at + markers[i].size()) != std::string_view::npos) {
      return InternalError("chat template did not render message " + std::to_string(i) +
                           " verbatim exactly once");
    }
    if (at > pos) pieces.push_back({std::string(rendered.substr(pos, at - pos)), false});
    if (!values[i].empty()) pieces.push_back({std::string(values[i]), true});
    pos = at + markers[i].size();
  }
  if (pos < rendered.size()) pieces.push_back({std::string(rendered.substr(pos)), false});
  return pieces;
}

PromptPieces ChatMlFirstTurn(std::string_view system, std::string_view user) {
  PromptPieces p;
  if (!system.empty()) {
    p.push_back({"<|im_start|>system\n", false});
    p.push_back({std::string(system), true});
    p.push_back({"<|im_end|>\n", false});
  }
  p.push_back({"<|im_start|>user\n", false});
  p.push_back({std::string(user), true});
  p.push_back({"<|im_end|>\n" + std::string(kAssistantOpen), false});
  return p;
}

PromptPieces ChatMlNextTurn(std::string_view user) {
  return {{"<|im_end|>\n<|im_start|>user\n", false},
          {std::string(user), true},
          {"<|im_end|>\n" + std::string(kAssistantOpen), false}};
}

PromptPieces ChatMlConversation(const std::vector<Message>& messages, bool enable_thinking) {
  PromptPieces p;
  for (const Message& m : messages) {
    p.push_back({"<|im_start|>" + m.role + "\n", false});
    p.push_back({m.content, true});
    p.push_back({"<|im_end|>\n", false});
  }
  p.push_back({enable_thinking ? std::string("<|im_start|>assistant\n") : std::string(kAssistantOpen), false});
  return p;
}

}  // namespace llmd::chat
