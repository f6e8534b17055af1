#include "chat/stop_strings.h"

#include <algorithm>
#include <utility>

namespace llmd::chat {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string StopStrings::Push(std::string_view chunk) {
  if (stopped_) return {};
  held_.append(chunk);
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest complete stop string ends the stream.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(s).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  // Never split a character: a held tail starts on a character boundary.
  size_t cut = held_.size() - keep;
  while (cut > 0 && cut < held_.size() && (static_cast<unsigned char>(held_[cut]) & 0xC0) == 0x80) --cut;
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string StopStrings::Finish() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace llmd::chat
