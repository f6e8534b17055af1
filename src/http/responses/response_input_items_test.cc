#include "http/responses/response_input_items.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace llmd::http {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

QueryParams Query(const std::string& raw) {
  auto q = ParseQueryString(raw);
  EXPECT_TRUE(q.has_value()) << raw;
  return q.has_value() ? *q : QueryParams{};
}

// resp_R: an earlier turn (with its ids), this turn's input (without), and its one output item.
StoredResponse Stored() {
  ordered items = ordered::parse(R"([
    {"id":"msg_P_in0","type":"message","role":"user","content":"Hi"},
    {"id":"msg_P","type":"message","role":"assistant","status":"completed",
     "content":[{"type":"output_text","text":"Hello","annotations":[]}]},
    {"role":"user","content":"Weather?"},
    {"type":"function_call","call_id":"c1","name":"weather","arguments":"{}"},
    {"type":"function_call_output","call_id":"c1","output":"sunny"},
    {"id":"msg_R","type":"message","role":"assistant","content":[{"type":"output_text","text":"Sunny."}]}
  ])");
  AssignItemIds(&items, "resp_R");
  return {"resp_R", "uid:1", 0, R"({"id":"resp_R","object":"response","output":[{"id":"msg_R"}]})", items.dump()};
}

std::vector<std::string> Ids(const json& list) {
  std::vector<std::string> ids;
  for (const json& item : list.at("data")) ids.push_back(item.at("id"));
  return ids;
}

json List(const std::string& raw_query, const StoredResponse& stored = Stored()) {
  auto page = ParseInputItemsQuery(Query(raw_query));
  EXPECT_TRUE(page.has_value()) << raw_query << ": " << page.error().message();
  if (!page.has_value()) return json::object();
  auto text = RenderInputItems(stored, *page);
  EXPECT_TRUE(text.has_value()) << text.error().message();
  return text.has_value() ? json::parse(*text) : json::object();
}

TEST(InputItems, ListsTheInputNewestFirstWithoutTheOutput) {
  const json list = List("");
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(Ids(list), (std::vector<std::string>{"fco_R_in4", "fc_R_in3", "msg_R_in2", "msg_P", "msg_P_in0"}));
  EXPECT_EQ(list["first_id"], "fco_R_in4");
  EXPECT_EQ(list["last_id"], "msg_P_in0");
  EXPECT_EQ(list["has_more"], false);
  // OpenAI's item shapes: a string content as a text part, a status on every item.
  const json& user = list["data"][2];
  EXPECT_EQ(user, json::parse(R"({"id":"msg_R_in2","type":"message","role":"user",
                                  "content":[{"type":"input_text","text":"Weather?"}],"status":"completed"})"));
  EXPECT_EQ(list["data"][1]["type"], "function_call");
  EXPECT_EQ(list["data"][1]["status"], "completed");
}

TEST(InputItems, PagesByLimitAfterAndBefore) {
  const json first = List("limit=2&order=asc");
  EXPECT_EQ(Ids(first), (std::vector<std::string>{"msg_P_in0", "msg_P"}));
  EXPECT_EQ(first["has_more"], true);
  const json second = List("limit=2&order=asc&after=msg_P");
  EXPECT_EQ(Ids(second), (std::vector<std::string>{"msg_R_in2", "fc_R_in3"}));
  EXPECT_EQ(second["has_more"], true);
  const json last = List("limit=2&order=asc&after=fc_R_in3");
  EXPECT_EQ(Ids(last), (std::vector<std::string>{"fco_R_in4"}));
  EXPECT_EQ(last["has_more"], false);
  const json past = List("order=asc&after=fco_R_in4");
  EXPECT_TRUE(past["data"].empty());
  EXPECT_TRUE(past["first_id"].is_null());
  // before: the nearest `limit` items before it, in the page's order.
  const json before = List("limit=2&before=msg_P_in0");
  EXPECT_EQ(Ids(before), (std::vector<std::string>{"msg_R_in2", "msg_P"}));
  EXPECT_EQ(before["has_more"], true);
}

TEST(InputItems, ARecordWithoutIdsGetsTheSameIdsWhenListed) {
  StoredResponse old = Stored();
  ordered items = ordered::parse(old.items_json);
  for (ordered& item : items) {
    if (item["id"].get<std::string>().find("_R_in") != std::string::npos) item.erase("id");  // this turn's
  }
  old.items_json = items.dump();
  EXPECT_EQ(Ids(List("", old)), Ids(List("")));
}

TEST(InputItems, RefusesBadQueriesByName) {
  struct Case {
    std::string raw, says;
  };
  for (const Case& c : {Case{"limit=0", "'limit' must be an integer in 1..100 (got '0')"},
                        Case{"limit=101", "'limit' must be an integer in 1..100"},
                        Case{"limit=ten", "'limit' must be an integer in 1..100 (got 'ten')"},
                        Case{"limit=1&limit=2", "'limit' is given more than once"},
                        Case{"order=up", "'order' must be asc or desc (got 'up')"},
                        Case{"after=", "'after' must be an item id"},
                        Case{"after=a&before=b", "'after' and 'before' cannot be used together"},
                        Case{"include[]=bogus", "'include' value 'bogus' is not a known include value"},
                        Case{"include=message.output_text.logprobs,bogus", "'include' value 'bogus'"}}) {
    auto page = ParseInputItemsQuery(Query(c.raw));
    ASSERT_FALSE(page.has_value()) << c.raw;
    EXPECT_EQ(page.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(page.error().message().find(c.says), std::string::npos) << c.raw << ": " << page.error().message();
  }
  // Known includes in each of the clients' array spellings, and names llmd does not know.
  EXPECT_TRUE(ParseInputItemsQuery(Query("include[]=message.input_image.image_url&include=reasoning.encrypted_content"
                                         "&api-version=2025-04-01"))
                  .has_value());
  auto unknown_after = RenderInputItems(Stored(), {.after = "msg_nope"});
  ASSERT_FALSE(unknown_after.has_value());
  EXPECT_NE(unknown_after.error().message().find("'after' is not an input item of this response: 'msg_nope'"),
            std::string::npos);
}

TEST(InputItems, RetrieveTakesIncludeAndRefusesAStream) {
  EXPECT_TRUE(CheckRetrieveQuery(Query("include[]=message.output_text.logprobs&stream=false")).ok());
  EXPECT_NE(CheckRetrieveQuery(Query("stream=true")).message().find("'stream' is not supported here"),
            std::string::npos);
  EXPECT_NE(CheckRetrieveQuery(Query("starting_after=3")).message().find("'starting_after' is not supported"),
            std::string::npos);
  EXPECT_FALSE(CheckRetrieveQuery(Query("include=nope")).ok());
}

}  // namespace
}  // namespace llmd::http
