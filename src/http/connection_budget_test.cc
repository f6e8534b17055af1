// ConnectionBudget and FairShares, in counts: how many slots a holder gets alone, beside
// others and as a newcomer; the unidentified pool a slow-header flood is confined to; slots
// moving between pools and given back.
#include "http/connection_budget.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace llmd::http {
namespace {

using Pool = ConnectionBudget::Pool;

// Takes slots for `holder` until refused; returns how many it got.
size_t TakeAll(FairShares& pool, uint64_t holder) {
  size_t n = 0;
  while (pool.TryTake(holder)) ++n;
  return n;
}

TEST(FairShares, AHolderAloneLeavesTheReserveToNewcomers) {
  FairShares pool(8);
  EXPECT_EQ(pool.reserve(), 1u);
  EXPECT_EQ(TakeAll(pool, 1), 7u);
  EXPECT_TRUE(pool.TryTake(2)) << "a newcomer takes the reserve";
  EXPECT_FALSE(pool.TryTake(3)) << "the pool is full";
  EXPECT_FALSE(pool.TryTake(2));
  pool.Give(1);
  EXPECT_FALSE(pool.TryTake(1)) << "the freed slot is the reserve again";
  EXPECT_TRUE(pool.TryTake(3)) << "which a newcomer may take";
  EXPECT_EQ(pool.used(), 8u);
}

TEST(FairShares, SharesShrinkAsHoldersArriveAndGrowAsTheyLeave) {
  FairShares pool(24);
  EXPECT_EQ(pool.reserve(), 3u);
  EXPECT_EQ(TakeAll(pool, 1), 21u);
  EXPECT_TRUE(pool.TryTake(2));
  EXPECT_FALSE(pool.TryTake(2)) << "only the reserve is free: kept for newcomers";
  for (int i = 0; i < 11; ++i) pool.Give(1);  // holder 1 now holds 10
  EXPECT_FALSE(pool.TryTake(1)) << "two holders: a share is 21 / 2 = 10";
  EXPECT_EQ(TakeAll(pool, 2), 9u) << "holder 2 grows to its share of 10";
  EXPECT_TRUE(pool.TryTake(3)) << "a newcomer";
  EXPECT_EQ(pool.holders(), 3u);
  EXPECT_FALSE(pool.TryTake(3)) << "21 of 24 used: the reserve";
  for (int i = 0; i < 10; ++i) pool.Give(2);  // holder 2 leaves
  EXPECT_EQ(TakeAll(pool, 3), 9u) << "two holders again: holder 3 grows to 10";
  EXPECT_EQ(pool.held(1), 10u);
  EXPECT_EQ(pool.held(2), 0u);
  EXPECT_EQ(pool.held(3), 10u);
}

TEST(FairShares, NoHolderEverHoldsEverySlotAndANewcomerAlwaysGetsOne) {
  for (size_t slots = 2; slots <= 64; ++slots) {
    FairShares pool(slots);
    const size_t alone = TakeAll(pool, 1);
    EXPECT_LT(alone, slots) << slots << " slots";
    EXPECT_GE(alone, 1u);
    EXPECT_TRUE(pool.TryTake(2)) << slots << " slots";
  }
}

TEST(FairShares, TinyPools) {
  FairShares none(0);
  EXPECT_FALSE(none.TryTake(1));
  FairShares one(1);
  EXPECT_TRUE(one.TryTake(1));
  EXPECT_FALSE(one.TryTake(1));
  EXPECT_FALSE(one.TryTake(2)) << "full";
  FairShares two(2);
  EXPECT_TRUE(two.TryTake(1));
  EXPECT_FALSE(two.TryTake(1)) << "the other is the reserve";
  EXPECT_TRUE(two.TryTake(2));
}

TEST(FairShares, GivingWhatIsNotHeldChangesNothing) {
  FairShares pool(4);
  pool.Give(9);
  EXPECT_EQ(pool.used(), 0u);
  ASSERT_TRUE(pool.TryTake(1));
  pool.Give(9);
  EXPECT_EQ(pool.used(), 1u);
}

TEST(ConnectionBudget, SplitsTheTotalIntoTwoPools) {
  ConnectionBudget budget(32, 8);
  std::vector<ConnectionBudget::Slot> held;
  while (auto s = budget.Take(Pool::kUnidentified, 0)) held.push_back(std::move(*s));
  EXPECT_EQ(held.size(), 7u) << "one UID alone: 8 less the reserve of 1";
  EXPECT_EQ(budget.used(Pool::kIdentified), 0u);
  EXPECT_TRUE(budget.Take(Pool::kUnidentified, 65534).has_value()) << "another UID still gets one";
  while (auto s = budget.Take(Pool::kIdentified, 0)) held.push_back(std::move(*s));
  EXPECT_EQ(budget.held(Pool::kIdentified, 0), 21u) << "24 less the reserve of 3: the flood's UID took none of it";
  held.clear();
  EXPECT_EQ(budget.used(Pool::kUnidentified), 0u);
  EXPECT_EQ(budget.used(Pool::kIdentified), 0u);
}

TEST(ConnectionBudget, AFloodOfUnidentifiedPeersIsOneHolder) {
  ConnectionBudget budget(32, 8);
  std::vector<ConnectionBudget::Slot> held;
  for (int i = 0; i < 40; ++i) {
    if (auto s = budget.Take(Pool::kUnidentified, ConnectionBudget::kNoUid)) held.push_back(std::move(*s));
  }
  EXPECT_EQ(held.size(), 7u);
  EXPECT_TRUE(budget.Take(Pool::kUnidentified, 1000).has_value()) << "a UID among them still gets one";
  EXPECT_TRUE(budget.Take(Pool::kIdentified, 1000).has_value());
}

TEST(ConnectionBudget, PromotionMovesASlotAndGivesBackTheOld) {
  ConnectionBudget budget(32, 8);
  auto slot = budget.Take(Pool::kUnidentified, 1000);
  ASSERT_TRUE(slot.has_value());
  ASSERT_TRUE(budget.Promote(*slot));
  EXPECT_EQ(slot->pool(), Pool::kIdentified);
  EXPECT_EQ(budget.used(Pool::kUnidentified), 0u);
  EXPECT_EQ(budget.held(Pool::kIdentified, 1000), 1u);
  EXPECT_TRUE(budget.Promote(*slot)) << "already there";
  EXPECT_EQ(budget.held(Pool::kIdentified, 1000), 1u);
  slot.reset();
  EXPECT_EQ(budget.used(Pool::kIdentified), 0u) << "given back when destroyed";
}

TEST(ConnectionBudget, APromotionTheShareRefusesLeavesTheSlotWhereItWas) {
  ConnectionBudget budget(32, 8);
  std::vector<ConnectionBudget::Slot> held;
  while (auto s = budget.Take(Pool::kIdentified, 1000)) held.push_back(std::move(*s));
  auto slot = budget.Take(Pool::kUnidentified, 1000);
  ASSERT_TRUE(slot.has_value());
  EXPECT_FALSE(budget.Promote(*slot));
  EXPECT_EQ(slot->pool(), Pool::kUnidentified);
  EXPECT_EQ(budget.held(Pool::kUnidentified, 1000), 1u);
  EXPECT_EQ(budget.held(Pool::kIdentified, 1000), 21u);
  auto anonymous = budget.Take(Pool::kUnidentified, ConnectionBudget::kNoUid);
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_FALSE(budget.Promote(*anonymous)) << "no UID: it stays unidentified";
}

TEST(ConnectionBudget, AMovedSlotIsGivenBackOnce) {
  ConnectionBudget budget(4, 0);
  {
    auto slot = budget.Take(Pool::kIdentified, 7);
    ASSERT_TRUE(slot.has_value());
    ConnectionBudget::Slot moved(std::move(*slot));
    auto another = budget.TakeAnother(moved);
    ASSERT_TRUE(another.has_value());
    EXPECT_EQ(another->holder(), 7u);
    EXPECT_EQ(budget.held(Pool::kIdentified, 7), 2u);
  }
  EXPECT_EQ(budget.used(Pool::kIdentified), 0u);
  EXPECT_FALSE(budget.Take(Pool::kUnidentified, 7).has_value()) << "no unidentified pool without TCP";
}

}  // namespace
}  // namespace llmd::http
