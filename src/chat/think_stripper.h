// ThinkStripper: removes <think>...</think> reasoning blocks from streamed model output.
//
// A state machine over text chunks (whole UTF-8 characters, e.g. from Utf8StreamAssembler).
// Tags may be split across chunks at any byte. Hidden text is discarded as it arrives, so
// memory stays bounded (at most one partial tag, 7 bytes, is held back) and nothing hidden
// ever reaches the output, even in pieces:
//  - nested <think> blocks count depth; text is visible again only at depth 0;
//  - an unterminated block hides everything to the end of the stream;
//  - a </think> with no opener is removed (the text around it is kept);
//  - whitespace right after a closing tag is dropped, so "<think>\n\n</think>\n\nHi"
//    yields "Hi" and an empty block leaves nothing behind.
//
// Not thread-safe; one per stream.
#ifndef LLMD_CHAT_THINK_STRIPPER_H_
#define LLMD_CHAT_THINK_STRIPPER_H_

#include <string>
#include <string_view>

namespace llmd::chat {

class ThinkStripper {
 public:
  // `starts_inside`: the prompt already opened a think block (thinking mode on), so output
  // is hidden until the model closes it.
  explicit ThinkStripper(bool starts_inside = false) : depth_(starts_inside ? 1 : 0) {}

  // Feeds the next chunk; returns the text that is now safe to show.
  std::string Push(std::string_view chunk);
  // Ends the stream and returns what was held back, if it is visible text.
  std::string Finish();

  // True while inside a think block (an unterminated block at Finish leaves this true).
  bool inside() const { return depth_ > 0; }

 private:
  int depth_;
  bool skip_whitespace_ = false;
  std::string held_;  // a possible partial tag at the end of the last chunk
};

// Non-streaming convenience: the whole text through one ThinkStripper.
std::string StripThinkTags(std::string_view text);

}  // namespace llmd::chat

#endif  // LLMD_CHAT_THINK_STRIPPER_H_
