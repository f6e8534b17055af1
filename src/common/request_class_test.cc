#include "common/request_class.h"

#include <gtest/gtest.h>

namespace llmd {
namespace {

constexpr auto kInteractive = RequestClass::kInteractive;
constexpr auto kNormal = RequestClass::kNormal;
constexpr auto kBackground = RequestClass::kBackground;

TEST(RequestClass, NamesRoundTripAndUnknownNamesAreRefused) {
  for (RequestClass c : {kInteractive, kNormal, kBackground}) EXPECT_EQ(ParseRequestClass(RequestClassName(c)), c);
  EXPECT_EQ(ParseRequestClass("priority"), std::nullopt);
  EXPECT_EQ(ParseRequestClass(""), std::nullopt);
  EXPECT_EQ(ParseRequestClass("Interactive"), std::nullopt);
}

TEST(RequestClass, APeerNoRuleNamesIsNormalAndMayOnlyLowerIt) {
  const PeerIdentity peer{1000, 1000};
  EXPECT_EQ(ResolveClass({}, peer, std::nullopt), kNormal);
  EXPECT_EQ(ResolveClass({}, peer, kInteractive), kNormal);
  EXPECT_EQ(ResolveClass({}, peer, kBackground), kBackground);
}

TEST(RequestClass, TheRuleGivesTheDefaultAndTheCeiling) {
  const std::vector<ClassRule> rules = {
      {.uid = 1001, .default_class = kInteractive, .ceiling = kInteractive},  // the voice pipeline
      {.uid = 1002, .default_class = kBackground, .ceiling = kNormal},        // the context engine
  };
  EXPECT_EQ(ResolveClass(rules, {1001, 1}, std::nullopt), kInteractive);
  EXPECT_EQ(ResolveClass(rules, {1001, 1}, kBackground), kBackground);
  EXPECT_EQ(ResolveClass(rules, {1002, 1}, std::nullopt), kBackground);
  EXPECT_EQ(ResolveClass(rules, {1002, 1}, kNormal), kNormal);
  EXPECT_EQ(ResolveClass(rules, {1002, 1}, kInteractive), kNormal);  // above its ceiling
}

TEST(RequestClass, AUidRuleWinsOverAGidRuleWhateverTheirOrder) {
  const std::vector<ClassRule> rules = {
      {.gid = 50, .default_class = kBackground, .ceiling = kBackground},
      {.uid = 1001, .default_class = kInteractive, .ceiling = kInteractive},
  };
  EXPECT_EQ(ResolveClass(rules, {1001, 50}, std::nullopt), kInteractive);
  EXPECT_EQ(ResolveClass(rules, {1003, 50}, kInteractive), kBackground);
  EXPECT_EQ(ResolveClass(rules, {std::nullopt, std::nullopt}, std::nullopt), kNormal);
}

}  // namespace
}  // namespace llmd
