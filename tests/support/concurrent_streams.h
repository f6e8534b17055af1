// Concurrent streams through the native socket: each prompt on its own connection at once,
// checked against the text it gives alone, and checked to have really overlapped.
#ifndef LLMD_TESTS_SUPPORT_CONCURRENT_STREAMS_H_
#define LLMD_TESTS_SUPPORT_CONCURRENT_STREAMS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "llmd/client.h"

namespace llmd::testing {

// Streams every prompt at once; each must give `solo[i]`, and every stream must have started
// before any finished (they shared decode steps, not took turns).
inline void ExpectConcurrentStreamsMatchSolo(const std::string& socket, const std::vector<std::string>& prompts,
                                             const GenerateOptions& options, const std::vector<std::string>& solo) {
  using Clock = std::chrono::steady_clock;
  const size_t n = prompts.size();
  std::vector<std::string> together(n);
  std::vector<Clock::time_point> first(n), last(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      LlmClient c(socket, std::chrono::seconds(120));
      auto g = c.GenerateStream(prompts[i], options, [&](std::string_view) {
        if (first[i] == Clock::time_point()) first[i] = Clock::now();
        last[i] = Clock::now();
        return true;
      });
      if (g.has_value()) together[i] = g->text;
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(together[i], solo[i]) << "stream " << i << " changed when batched";
  EXPECT_LT(*std::max_element(first.begin(), first.end()), *std::min_element(last.begin(), last.end()))
      << "the streams did not overlap";
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_CONCURRENT_STREAMS_H_
