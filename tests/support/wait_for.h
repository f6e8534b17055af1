// Test support: waiting for an event whose timing is up to the machine. Header-only.
//
// A test waits for what it needs to have happened (a log line, a counter, a descriptor
// count), never for a fixed time: a fixed sleep is too short on a loaded CI machine and
// wasted on a fast one. The limit is a liveness bound only: reaching it means the event is
// lost (a hang or a bug), not that the machine was slow.
#ifndef LLMD_TESTS_SUPPORT_WAIT_FOR_H_
#define LLMD_TESTS_SUPPORT_WAIT_FOR_H_

#include <chrono>
#include <thread>
#include <utility>

namespace llmd::testing {

// How long a test waits for an event before it calls the event lost.
inline constexpr std::chrono::seconds kLiveness{60};
// The same bound, for the APIs that take milliseconds as an int.
inline constexpr int kLivenessMillis = static_cast<int>(std::chrono::milliseconds(kLiveness).count());

// Polls `done` until it returns true (then true) or `limit` passes (then false). Between
// polls it calls `pause(ms)`, which waits up to `ms` milliseconds and may return as soon as
// something happened (a channel's Wait, a poll on a descriptor).
template <typename Pred, typename Pause>
bool WaitFor(Pred&& done, std::chrono::milliseconds limit, Pause&& pause) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    pause(20);
  }
  return true;
}

// Polls `done` every 20 ms until it returns true (then true) or `limit` passes (then false).
template <typename Pred>
bool WaitFor(Pred&& done, std::chrono::milliseconds limit = kLiveness) {
  return WaitFor(std::forward<Pred>(done), limit,
                 [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_WAIT_FOR_H_
