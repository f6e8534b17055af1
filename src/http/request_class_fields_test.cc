#include "http/request_class_fields.h"

#include <gtest/gtest.h>

#include <string>

#include "http/anthropic/anthropic_api.h"
#include "http/openai/openai_request.h"
#include "http/responses/responses_api.h"

namespace llmd::http {
namespace {

using nlohmann::json;
constexpr auto kInteractive = RequestClass::kInteractive;
constexpr auto kNormal = RequestClass::kNormal;
constexpr auto kBackground = RequestClass::kBackground;

std::optional<RequestClass> OpenAi(const char* body) {
  auto c = OpenAiRequestClass(json::parse(body));
  EXPECT_TRUE(c.has_value()) << body;
  return c.has_value() ? *c : std::nullopt;
}

TEST(RequestClassFields, OpenAiServiceTierNamesAClassAndAutoLeavesThePeersOwn) {
  EXPECT_EQ(OpenAi(R"({"service_tier":"priority"})"), kInteractive);
  EXPECT_EQ(OpenAi(R"({"service_tier":"flex"})"), kBackground);
  EXPECT_EQ(OpenAi(R"({"service_tier":"default"})"), kNormal);
  EXPECT_EQ(OpenAi(R"({"service_tier":"auto"})"), std::nullopt);
  EXPECT_EQ(OpenAi(R"({"service_tier":null})"), std::nullopt);
  EXPECT_EQ(OpenAi(R"({})"), std::nullopt);
  auto bad = OpenAiRequestClass(json::parse(R"({"service_tier":"scale"})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("must be one of auto, default, flex, priority"), std::string::npos);
}

TEST(RequestClassFields, VllmPriorityIsLowerForSoonerAndServiceTierWins) {
  EXPECT_EQ(OpenAi(R"({"priority":-5})"), kInteractive);
  EXPECT_EQ(OpenAi(R"({"priority":0})"), std::nullopt);
  EXPECT_EQ(OpenAi(R"({"priority":5})"), kBackground);
  EXPECT_EQ(OpenAi(R"({"priority":5,"service_tier":"priority"})"), kInteractive);
  EXPECT_FALSE(OpenAiRequestClass(json::parse(R"({"priority":"high"})")).has_value());
  EXPECT_FALSE(OpenAiRequestClass(json::parse(R"({"priority":1.5})")).has_value());
}

TEST(RequestClassFields, AnthropicServiceTierAndTheHeader) {
  EXPECT_EQ(*AnthropicRequestClass(json::parse(R"({"service_tier":"standard_only"})")), kNormal);
  EXPECT_EQ(*AnthropicRequestClass(json::parse(R"({"service_tier":"auto"})")), std::nullopt);
  EXPECT_FALSE(AnthropicRequestClass(json::parse(R"({"service_tier":"priority"})")).has_value());
  EXPECT_EQ(*RequestClassHeader("background"), kBackground);
  EXPECT_EQ(*RequestClassHeader(""), std::nullopt);
  auto bad = RequestClassHeader("urgent");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("X-Llmd-Class must be interactive, normal or background"), std::string::npos);
}

TEST(RequestClassFields, TheDeadlineHeaderIsWholeMilliseconds) {
  EXPECT_EQ(*DeadlineHeader(""), std::nullopt);
  EXPECT_EQ(*DeadlineHeader("250"), 250u);
  for (const char* bad : {"0", "-1", "1.5", "soon", "3600001", "250ms"}) {
    auto r = DeadlineHeader(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message().find("X-Llmd-Deadline-Ms"), std::string::npos);
  }
}

TEST(RequestClassFields, EveryParserCarriesTheClass) {
  auto chat = ParseChatRequest(R"({"messages":[{"role":"user","content":"hi"}],"service_tier":"flex"})");
  ASSERT_TRUE(chat.has_value()) << chat.error().ToString();
  EXPECT_EQ(chat->request_class, kBackground);
  auto completion = ParseCompletionRequest(R"({"prompt":"hi","priority":-1})");
  ASSERT_TRUE(completion.has_value()) << completion.error().ToString();
  EXPECT_EQ(completion->request_class, kInteractive);
  auto responses = ParseResponsesRequest(R"({"input":"hi","service_tier":"priority"})");
  ASSERT_TRUE(responses.has_value()) << responses.error().ToString();
  EXPECT_EQ(responses->request_class, kInteractive);
  auto anthropic = ParseAnthropicRequest(
      R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"service_tier":"standard_only"})",
      AnthropicBody::kMessages);
  ASSERT_TRUE(anthropic.has_value()) << anthropic.error().ToString();
  EXPECT_EQ(anthropic->request_class, kNormal);
}

}  // namespace
}  // namespace llmd::http
