#include "sched/decode_calls.h"

#include <algorithm>
#include <map>

namespace llmd::sched {

std::vector<std::vector<engine::DecodeItem>> ShapeStableCalls(const std::vector<engine::DecodeItem>& items,
                                                             size_t piece_tokens) {
  std::vector<std::vector<engine::DecodeItem>> per_sequence;  // in order of first appearance
  std::map<int32_t, size_t> index;
  for (const auto& item : items) {
    auto [it, added] = index.try_emplace(item.sequence, per_sequence.size());
    if (added) per_sequence.emplace_back();
    per_sequence[it->second].push_back(item);
  }
  std::vector<std::vector<engine::DecodeItem>> calls;
  std::map<size_t, size_t> open_call;  // token count -> the call still taking sequences of it
  for (auto& tokens : per_sequence) {
    const size_t n = tokens.size();
    const size_t per_call = std::max<size_t>(1, piece_tokens / n);
    auto it = open_call.find(n);
    if (it == open_call.end() || calls[it->second].size() / n >= per_call) {
      it = open_call.insert_or_assign(n, calls.size()).first;
      calls.emplace_back();
    }
    calls[it->second].insert(calls[it->second].end(), tokens.begin(), tokens.end());
  }
  return calls;
}

std::vector<std::vector<engine::DecodeItem>> GenerationThenPromptCalls(const std::vector<engine::DecodeItem>& items) {
  std::vector<std::vector<engine::DecodeItem>> calls(1);  // the generated tokens first
  std::map<int32_t, size_t> prompt_call;                  // sequence -> its prompt call
  for (const auto& item : items) {
    if (item.prompt_tokens <= 0) {
      calls.front().push_back(item);
      continue;
    }
    auto [it, added] = prompt_call.try_emplace(item.sequence, calls.size());
    if (added) calls.emplace_back();
    calls[it->second].push_back(item);
  }
  if (calls.front().empty()) calls.erase(calls.begin());
  return calls;
}

void OrderBySequence(std::vector<engine::DecodeItem>* items) {
  std::stable_sort(items->begin(), items->end(),
                   [](const engine::DecodeItem& a, const engine::DecodeItem& b) { return a.sequence < b.sequence; });
}

}  // namespace llmd::sched
