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

namespace llmd::testing {

// How long a test waits for an event before it calls the event lost.
inline constexpr std::chrono::seconds kLiveness{60};

// Polls `done` until it returns true (then true) or `limit` passes (then false).
template <typename Pred>
bool WaitFor(Pred&& done, std::chrono::milliseconds limit = kLiveness) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_WAIT_FOR_H_
