// Clock: time through an interface, so rate limits and deadlines are testable.
#ifndef LLMD_COMMON_CLOCK_H_
#define LLMD_COMMON_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace llmd {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds.
  virtual int64_t NowMs() const = 0;
  // Monotonic microseconds, for durations of a few milliseconds (a decode step).
  virtual int64_t NowUs() const { return NowMs() * 1000; }
};

class RealClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t NowUs() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static const RealClock& Get() {
    static const RealClock clock;
    return clock;
  }
};

// A clock tests move by hand. Thread-safe: a test thread may move it while a worker reads it.
class ManualClock final : public Clock {
 public:
  int64_t NowMs() const override { return now_ms_.load(); }
  void Advance(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_{1000};
};

}  // namespace llmd

#endif  // LLMD_COMMON_CLOCK_H_
