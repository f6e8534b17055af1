// StopStrings: ends a streamed generation at the first occurrence of any stop string (the
// OpenAI `stop` parameter), across chunk boundaries.
//
// Text that could be the start of a stop string is held back until it is known not to be,
// so a client never sees any part of a stop string, even in pieces; the stop string itself
// and everything after it are dropped. Memory is bounded by the longest stop string.
//
// Not thread-safe; one per stream.
#ifndef LLMD_CHAT_STOP_STRINGS_H_
#define LLMD_CHAT_STOP_STRINGS_H_

#include <string>
#include <string_view>
#include <vector>

namespace llmd::chat {

class StopStrings {
 public:
  // Empty strings are ignored; with none left, Push passes everything through.
  explicit StopStrings(std::vector<std::string> stops = {});

  // Feeds the next chunk (whole UTF-8 characters); returns the text that is now safe to show.
  // After a stop string was found, returns "" for good and stopped() is true.
  std::string Push(std::string_view chunk);
  // Ends the stream: returns what was held back (no stop string completed).
  std::string Finish();

  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace llmd::chat

#endif  // LLMD_CHAT_STOP_STRINGS_H_
