#include "chat/think_stripper.h"

namespace llmd::chat {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Whether `s` (starting with '<') is a proper prefix of one of the tags.
bool IsPartialTag(std::string_view s) {
  return (s.size() < kOpen.size() && kOpen.starts_with(s)) ||
         (s.size() < kClose.size() && kClose.starts_with(s));
}

}  // namespace

std::string ThinkStripper::Push(std::string_view chunk) {
  std::string input = std::move(held_);
  input.append(chunk);
  held_.clear();

  std::string out;
  std::string_view rest(input);
  while (!rest.empty()) {
    size_t lt = rest.find('<');
    std::string_view text = rest.substr(0, lt);
    if (depth_ == 0) {
      if (skip_whitespace_) {
        while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
        if (!text.empty()) skip_whitespace_ = false;
      }
      out.append(text);
    }
    if (lt == std::string_view::npos) break;
    rest.remove_prefix(lt);

    if (rest.starts_with(kOpen)) {
      ++depth_;
      rest.remove_prefix(kOpen.size());
    } else if (rest.starts_with(kClose)) {
      if (depth_ > 0) --depth_;  // a closer with no opener is dropped as well
      if (depth_ == 0) skip_whitespace_ = true;
      rest.remove_prefix(kClose.size());
    } else if (IsPartialTag(rest)) {
      held_ = std::string(rest);  // decide once more bytes arrive
      break;
    } else {
      if (depth_ == 0) {
        out.push_back('<');
        skip_whitespace_ = false;
      }
      rest.remove_prefix(1);
    }
  }
  return out;
}

std::string ThinkStripper::Finish() {
  std::string out;
  if (depth_ == 0) out = std::move(held_);  // a partial tag that never completed is text
  held_.clear();
  return out;
}

std::string StripThinkTags(std::string_view text) {
  ThinkStripper stripper;
  std::string out = stripper.Push(text);
  out += stripper.Finish();
  return out;
}

}  // namespace llmd::chat
