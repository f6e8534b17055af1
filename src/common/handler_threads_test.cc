#include "common/handler_threads.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <future>

namespace llmd {
namespace {

TEST(HandlerThreads, RunsUpToTheCapAndRefusesMore) {
  HandlerThreads threads(2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  EXPECT_TRUE(threads.TryStart([gate] { gate.wait(); }));
  EXPECT_TRUE(threads.TryStart([gate] { gate.wait(); }));
  EXPECT_FALSE(threads.TryStart([] {})) << "a third handler over the cap of 2";
  EXPECT_EQ(threads.active(), 2u);
  release.set_value();
  threads.JoinAll();
  EXPECT_EQ(threads.active(), 0u);
  EXPECT_TRUE(threads.TryStart([] {})) << "room again once they returned";
}

TEST(HandlerThreads, AFinishedHandlerWakesTheDoneFdAndIsReaped) {
  HandlerThreads threads(4);
  std::atomic<int> ran{0};
  ASSERT_TRUE(threads.TryStart([&] { ++ran; }));
  pollfd p{threads.done_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "liveness: the handler never signalled";
  threads.Reap();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(threads.active(), 0u);
}

TEST(HandlerThreads, TheDestructorJoinsRunningHandlers) {
  std::atomic<bool> finished{false};
  {
    HandlerThreads threads(1);
    ASSERT_TRUE(threads.TryStart([&] {
      std::this_thread::yield();
      finished = true;
    }));
  }
  EXPECT_TRUE(finished.load()) << "the handler outlived its owner";
}

}  // namespace
}  // namespace llmd
