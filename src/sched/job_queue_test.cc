#include "sched/job_queue.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmd::sched {
namespace {

Job Named(std::string text, RequestClass c, std::optional<uint32_t> uid) {
  Job job;
  job.prompt = RawCompletion{std::move(text)};
  job.request_class = c;
  job.peer_uid = uid;
  return job;
}

std::string NameOf(const Job& job) { return std::get<RawCompletion>(job.prompt).prompt; }

std::vector<std::string> Drain(JobQueue& queue) {
  std::vector<std::string> order;
  while (auto job = queue.Pop()) order.push_back(NameOf(*job));
  return order;
}

TEST(JobQueue, TheHigherClassGoesFirstWhateverTheOrderOfArrival) {
  JobQueue queue(8);
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kBackground, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("n1", RequestClass::kNormal, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("i1", RequestClass::kInteractive, 1)).ok());
  EXPECT_EQ(queue.FirstClass(), RequestClass::kInteractive);
  EXPECT_EQ(Drain(queue), (std::vector<std::string>{"i1", "n1", "b1"}));
}

TEST(JobQueue, PeersOfOneClassTakeTurnsAndEachKeepsItsOwnOrder) {
  JobQueue queue(16);
  for (const char* name : {"a1", "a2", "a3", "a4"}) ASSERT_TRUE(queue.Push(Named(name, RequestClass::kNormal, 1000)).ok());
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kNormal, 2000)).ok());
  ASSERT_TRUE(queue.Push(Named("b2", RequestClass::kNormal, 2000)).ok());
  ASSERT_TRUE(queue.Push(Named("u1", RequestClass::kNormal, std::nullopt)).ok());
  EXPECT_EQ(Drain(queue), (std::vector<std::string>{"a1", "b1", "u1", "a2", "b2", "a3", "a4"}));
}

TEST(JobQueue, TheTurnPassesOnAcrossPopsAndNewArrivals) {
  JobQueue queue(16);
  ASSERT_TRUE(queue.Push(Named("a1", RequestClass::kNormal, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("a2", RequestClass::kNormal, 1)).ok());
  EXPECT_EQ(NameOf(*queue.Pop()), "a1");
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kNormal, 2)).ok());  // arrives after a1 was served
  EXPECT_EQ(Drain(queue), (std::vector<std::string>{"b1", "a2"}));
}

TEST(JobQueue, InOrderIsTheOrderPopHandsThemOut) {
  JobQueue queue(16);
  for (const char* name : {"a1", "a2", "a3"}) ASSERT_TRUE(queue.Push(Named(name, RequestClass::kNormal, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kNormal, 2)).ok());
  ASSERT_TRUE(queue.Push(Named("x1", RequestClass::kBackground, 3)).ok());
  ASSERT_TRUE(queue.Push(Named("i1", RequestClass::kInteractive, 3)).ok());
  EXPECT_EQ(NameOf(*queue.Pop()), "i1");
  EXPECT_EQ(NameOf(*queue.Pop()), "a1");  // the turn passes to peer 2 next
  std::vector<std::string> predicted;
  for (const Job* job : queue.InOrder()) predicted.push_back(NameOf(*job));
  EXPECT_EQ(predicted, (std::vector<std::string>{"b1", "a2", "a3", "x1"}));
  EXPECT_EQ(NameOf(*queue.Heads().front()), "b1");
  EXPECT_EQ(Drain(queue), predicted);
}

TEST(JobQueue, HeadsListEachPeersNextJobInTurnAndTakingOnePassesTheTurnOn) {
  JobQueue queue(16);
  for (const char* name : {"a1", "a2"}) ASSERT_TRUE(queue.Push(Named(name, RequestClass::kNormal, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kNormal, 2)).ok());
  ASSERT_TRUE(queue.Push(Named("c1", RequestClass::kNormal, 3)).ok());
  ASSERT_TRUE(queue.Push(Named("x1", RequestClass::kBackground, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("i1", RequestClass::kInteractive, 2)).ok());
  EXPECT_EQ(NameOf(*queue.Pop()), "i1");
  EXPECT_EQ(NameOf(*queue.Pop()), "a1");  // peer 2's turn next
  auto names = [](const std::vector<const Job*>& jobs) {
    std::vector<std::string> out;
    for (const Job* job : jobs) out.push_back(NameOf(*job));
    return out;
  };
  EXPECT_EQ(names(queue.Heads()), (std::vector<std::string>{"b1", "c1", "a2", "x1"}));
  // Peer 3 is taken out of turn (peer 2 may not take a sequence now): the turn goes on from 3.
  EXPECT_EQ(NameOf(queue.Take(queue.Heads()[1])), "c1");
  EXPECT_EQ(names(queue.Heads()), (std::vector<std::string>{"a2", "b1", "x1"}));
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_EQ(Drain(queue), (std::vector<std::string>{"a2", "b1", "x1"}));
}

TEST(JobQueue, EachClassHasItsOwnDepth) {
  JobQueue queue(2);
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kBackground, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("b2", RequestClass::kBackground, 1)).ok());
  const Status full = queue.Push(Named("b3", RequestClass::kBackground, 1));
  EXPECT_EQ(full.reason(), ErrorReason::kQueueFull);
  EXPECT_NE(full.message().find("background"), std::string::npos) << full.message();
  EXPECT_TRUE(queue.Push(Named("i1", RequestClass::kInteractive, 1)).ok());
  EXPECT_TRUE(queue.Push(Named("n1", RequestClass::kNormal, 1)).ok());
  EXPECT_EQ(queue.size(), 4u);
  EXPECT_EQ(queue.size(RequestClass::kBackground), 2u);
  EXPECT_EQ(queue.AheadOf(RequestClass::kNormal), 2u);
  EXPECT_EQ(queue.AheadOf(RequestClass::kInteractive), 1u);
}

TEST(JobQueue, PopStopsAtTheLowestClassAsked) {
  JobQueue queue(4);
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kBackground, 1)).ok());
  EXPECT_FALSE(queue.Pop(RequestClass::kNormal).has_value());
  EXPECT_EQ(NameOf(*queue.Pop(RequestClass::kBackground)), "b1");
  EXPECT_TRUE(queue.empty());
}

TEST(JobQueue, TakeAllEmptiesEveryClass) {
  JobQueue queue(4);
  ASSERT_TRUE(queue.Push(Named("b1", RequestClass::kBackground, 1)).ok());
  ASSERT_TRUE(queue.Push(Named("i1", RequestClass::kInteractive, 2)).ok());
  EXPECT_EQ(queue.TakeAll().size(), 2u);
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(queue.FirstClass().has_value());
}

}  // namespace
}  // namespace llmd::sched
