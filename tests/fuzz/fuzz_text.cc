// User-text hygiene and output streaming on arbitrary bytes:
//  - SanitizeUserInput either refuses (invalid UTF-8) or returns valid UTF-8 with no C0
//    control other than tab/LF/CR, no DEL, and no typed \n, \t or \r pairs left over from
//    the input it kept;
//  - the UTF-8 stream assembler, fed in pieces, only ever emits valid UTF-8;
//  - the think stripper gives the same text however the stream is split.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/text_safety.h"
#include "chat/think_stripper.h"
#include "common/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 8;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (auto clean = llmd::chat::SanitizeUserInput(input); clean.has_value()) {
    if (!llmd::IsValidUtf8(*clean)) __builtin_trap();
    for (unsigned char c : *clean) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) __builtin_trap();
    }
    if (clean->size() > input.size()) __builtin_trap();
  }
  if (!llmd::IsValidUtf8(llmd::chat::EscapeForLog(input))) __builtin_trap();

  llmd::Utf8StreamAssembler assembler;
  std::string assembled;
  for (size_t i = 0; i < input.size(); i += piece) {
    std::string out = assembler.Push(input.substr(i, piece));
    if (!llmd::IsValidUtf8(out)) __builtin_trap();
    assembled += out;
  }
  assembled += assembler.Finish();
  if (!llmd::IsValidUtf8(assembled)) __builtin_trap();

  const std::string whole = llmd::chat::StripThinkTags(assembled);
  llmd::chat::ThinkStripper stripper;
  std::string streamed;
  for (size_t i = 0; i < assembled.size(); i += piece) {
    streamed += stripper.Push(std::string_view(assembled).substr(i, piece));
  }
  streamed += stripper.Finish();
  if (streamed != whole) __builtin_trap();
  return 0;
}
