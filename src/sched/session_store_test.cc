#include "sched/session_store.h"

#include <gtest/gtest.h>

namespace llmd::sched {
namespace {

TEST(SessionStore, KeepsTheMostRecentlyUsedWithinItsCapacity) {
  SessionStore store(2);
  store.Record("a", {"sys", {1, 2}});
  store.Record("b", {"sys", {3}});
  store.Record("a", {"sys", {1, 2, 4}});  // a is used again
  store.Record("c", {"sys", {5}});         // b, the least recently used, goes
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.Get("b").has_value());
  ASSERT_TRUE(store.Get("a").has_value());
  EXPECT_EQ(store.Get("a")->tokens, (std::vector<engine::TokenId>{1, 2, 4}));
}

TEST(SessionStore, ARestoredSessionStaysButGoesFirstOnceAnotherIsUsed) {
  SessionStore store(2);
  store.Record("a", {"sys", {1}});
  store.Record("b", {"sys", {2}});
  store.Restore("r", {"saved", {9}});  // at capacity: the oldest used one goes, never r
  EXPECT_TRUE(store.Get("r").has_value());
  EXPECT_FALSE(store.Get("a").has_value());
  store.Record("c", {"sys", {3}});  // r, never used, is the first to go now
  EXPECT_FALSE(store.Get("r").has_value());
  EXPECT_TRUE(store.Get("b").has_value());
}

TEST(SessionStore, EraseSaysWhetherThereWasOne) {
  SessionStore store(4);
  store.Record("a", {"sys", {1}});
  EXPECT_TRUE(store.Erase("a"));
  EXPECT_FALSE(store.Erase("a"));
  EXPECT_EQ(store.size(), 0u);
}

}  // namespace
}  // namespace llmd::sched
