#include "sched/prefill_cuts.h"

#include <algorithm>

namespace llmd::sched {

std::vector<size_t> PrefillCuts(const std::vector<engine::TokenId>& prompt, engine::TokenId message_start,
                                size_t max_chunk) {
  std::vector<size_t> cuts;
  if (prompt.size() < 2) return cuts;
  const size_t last = prompt.size() - 1;
  size_t previous = 0, previous_message = 0;
  for (size_t i = 1; i < last; ++i) {
    const bool message = message_start >= 0 && prompt[i] == message_start && i - previous_message >= kMinMessageSpan;
    if (message) previous_message = i;
    if (message || i - previous == max_chunk) {
      cuts.push_back(i);
      previous = i;
    }
  }
  if (previous_message == 0 || previous_message + kNearEnd < last) cuts.push_back(last);
  return cuts;
}

bool IsCut(const std::vector<size_t>& cuts, size_t length) {
  return std::binary_search(cuts.begin(), cuts.end(), length);
}

std::vector<size_t> MessageCuts(const std::vector<engine::TokenId>& prompt, const std::vector<size_t>& cuts,
                                engine::TokenId message_start) {
  std::vector<size_t> out;
  if (message_start < 0) return out;
  for (size_t c : cuts) {
    if (prompt[c] == message_start) out.push_back(c);
  }
  return out;
}

}  // namespace llmd::sched
