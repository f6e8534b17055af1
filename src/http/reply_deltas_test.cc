#include "http/reply_deltas.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llmd::http {
namespace {

using engine::ParsedReply;

// Ids "call_1", "call_2", ... in the order they are made, counting the calls.
struct IdMaker {
  int made = 0;
  std::function<std::string()> fn() {
    return [this] { return "call_" + std::to_string(++made); };
  }
};

ParsedReply Content(std::string content, std::string reasoning = "") {
  ParsedReply r;
  r.content = std::move(content);
  r.reasoning_content = std::move(reasoning);
  return r;
}

ParsedReply Calls(std::vector<chat::ToolCall> calls, std::string content = "") {
  ParsedReply r;
  r.content = std::move(content);
  r.tool_calls = std::move(calls);
  return r;
}

TEST(ReplyDeltas, ContentGrowsByItsNewText) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_TRUE(d.Next(Content("")).empty());
  EXPECT_EQ(d.Next(Content("Hel")).content, "Hel");
  EXPECT_EQ(d.Next(Content("Hello")).content, "lo");
  EXPECT_TRUE(d.Next(Content("Hello")).empty());  // nothing new
  ReplyDelta last = d.Next(Content("Hello, world"));
  EXPECT_EQ(last.content, ", world");
  EXPECT_TRUE(last.reasoning_content.empty());
  EXPECT_TRUE(last.tool_calls.empty());
  EXPECT_EQ(ids.made, 0);
}

TEST(ReplyDeltas, ReasoningThenContent) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  ReplyDelta a = d.Next(Content("", "Let me"));
  EXPECT_EQ(a.reasoning_content, "Let me");
  EXPECT_TRUE(a.content.empty());
  EXPECT_EQ(d.Next(Content("", "Let me think.")).reasoning_content, " think.");
  // The think block closed: the answer begins, the reasoning stays as it was.
  ReplyDelta b = d.Next(Content("The", "Let me think."));
  EXPECT_TRUE(b.reasoning_content.empty());
  EXPECT_EQ(b.content, "The");
  ReplyDelta c = d.Next(Content("The answer", "Let me think."));
  EXPECT_EQ(c.content, " answer");
  EXPECT_TRUE(c.reasoning_content.empty());
}

TEST(ReplyDeltas, HeldBackTextIsSentOnceWhenReleasedAndNeverResent) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_EQ(d.Next(Content("Hello ")).content, "Hello ");
  // The text so far is "Hello <tool": the parser holds "<tool" back, it may open a call.
  EXPECT_TRUE(d.Next(Content("Hello ")).empty());
  // A parse shorter than what was sent takes nothing back and sends nothing.
  EXPECT_TRUE(d.Next(Content("Hel")).empty());
  // "<tools> are" was not a call after all: released, and only the new part goes out.
  EXPECT_EQ(d.Next(Content("Hello <tools> are")).content, "<tools> are");
  EXPECT_TRUE(d.Next(Content("Hello <tools> are")).empty());
  EXPECT_EQ(d.Next(Content("Hello <tools> are fun")).content, " fun");
}

TEST(ReplyDeltas, AToolCallWaitsForItsNameThenSendsIdAndNameOnceThenArgumentFragments) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_EQ(d.Next(Calls({}, "Checking.")).content, "Checking.");
  // Seen but not named yet: nothing, and no id made.
  EXPECT_TRUE(d.Next(Calls({{"", "", ""}}, "Checking.")).empty());
  EXPECT_TRUE(d.Next(Calls({{"", "", "{\"ci"}}, "Checking.")).empty());
  EXPECT_EQ(ids.made, 0);
  EXPECT_TRUE(d.ids().empty());

  ReplyDelta named = d.Next(Calls({{"", "get_weather", "{\"ci"}}, "Checking."));
  EXPECT_TRUE(named.content.empty());
  ASSERT_EQ(named.tool_calls.size(), 1u);
  EXPECT_EQ(named.tool_calls[0].index, 0u);
  EXPECT_EQ(named.tool_calls[0].id, "call_1");
  EXPECT_EQ(named.tool_calls[0].name, "get_weather");
  EXPECT_EQ(named.tool_calls[0].arguments, "{\"ci");

  ReplyDelta more = d.Next(Calls({{"", "get_weather", "{\"city\":\"Par"}}, "Checking."));
  ASSERT_EQ(more.tool_calls.size(), 1u);
  EXPECT_EQ(more.tool_calls[0].index, 0u);
  EXPECT_TRUE(more.tool_calls[0].id.empty());
  EXPECT_TRUE(more.tool_calls[0].name.empty());
  EXPECT_EQ(more.tool_calls[0].arguments, "ty\":\"Par");

  EXPECT_TRUE(d.Next(Calls({{"", "get_weather", "{\"city\":\"Par"}}, "Checking.")).empty());
  ReplyDelta rest = d.Next(Calls({{"", "get_weather", "{\"city\":\"Paris\"}"}}, "Checking."));
  ASSERT_EQ(rest.tool_calls.size(), 1u);
  EXPECT_EQ(rest.tool_calls[0].arguments, "is\"}");
  EXPECT_TRUE(rest.tool_calls[0].id.empty());
  EXPECT_EQ(ids.made, 1);
}

TEST(ReplyDeltas, ACallWaitsForItsArgumentsSoItsNameIsWhole) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_TRUE(d.Next(Calls({{"", "get_wea", ""}})).tool_calls.empty());  // a partial parse's half name
  ReplyDelta first = d.Next(Calls({{"", "get_weather", "{"}}));
  ASSERT_EQ(first.tool_calls.size(), 1u);
  EXPECT_EQ(first.tool_calls[0].id, "call_1");
  EXPECT_EQ(first.tool_calls[0].name, "get_weather");
  EXPECT_EQ(first.tool_calls[0].arguments, "{");
}

TEST(ReplyDeltas, TheFinalParseSendsACallWithNoArguments) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_TRUE(d.Next(Calls({{"", "now", ""}})).tool_calls.empty());
  ReplyDelta last = d.Next(Calls({{"", "now", ""}}), /*final=*/true);
  ASSERT_EQ(last.tool_calls.size(), 1u);
  EXPECT_EQ(last.tool_calls[0].name, "now");
}

TEST(ReplyDeltas, TwoCallsEachGetTheirIndexAndId) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  d.Next(Calls({{"", "a", "{\"x\":"}}));
  // The first call finishes and the second starts in the same step.
  ReplyDelta both = d.Next(Calls({{"", "a", "{\"x\":1}"}, {"", "b", "{"}}));
  ASSERT_EQ(both.tool_calls.size(), 2u);
  EXPECT_EQ(both.tool_calls[0].index, 0u);
  EXPECT_TRUE(both.tool_calls[0].id.empty());
  EXPECT_EQ(both.tool_calls[0].arguments, "1}");
  EXPECT_EQ(both.tool_calls[1].index, 1u);
  EXPECT_EQ(both.tool_calls[1].id, "call_2");
  EXPECT_EQ(both.tool_calls[1].name, "b");
  EXPECT_EQ(both.tool_calls[1].arguments, "{");
  // Only the call that changed is in the next delta.
  ReplyDelta second = d.Next(Calls({{"", "a", "{\"x\":1}"}, {"", "b", "{}"}}));
  ASSERT_EQ(second.tool_calls.size(), 1u);
  EXPECT_EQ(second.tool_calls[0].index, 1u);
  EXPECT_EQ(second.tool_calls[0].arguments, "}");
  EXPECT_EQ(d.ids(), (std::vector<std::string>{"call_1", "call_2"}));
}

TEST(ReplyDeltas, AnUnnamedCallHoldsBackTheCallsAfterIt) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  EXPECT_TRUE(d.Next(Calls({{"", "", "{}"}, {"", "b", "{}"}})).empty());
  ReplyDelta both = d.Next(Calls({{"", "a", "{}"}, {"", "b", "{}"}}));
  ASSERT_EQ(both.tool_calls.size(), 2u);
  EXPECT_EQ(both.tool_calls[0].id, "call_1");
  EXPECT_EQ(both.tool_calls[1].id, "call_2");
}

TEST(ReplyDeltas, IdsTheParserGaveAreKept) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  ReplyDelta first = d.Next(Calls({{"abc123", "f", "{}"}}));
  ASSERT_EQ(first.tool_calls.size(), 1u);
  EXPECT_EQ(first.tool_calls[0].id, "abc123");
  EXPECT_EQ(ids.made, 0);
  EXPECT_EQ(d.WithIds(Calls({{"abc123", "f", "{}"}})).tool_calls[0].id, "abc123");
}

TEST(ReplyDeltas, IdsAreStableAndWithIdsAgreesWithTheStream) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  std::vector<std::string> streamed;
  for (const ParsedReply& step : {Calls({{"", "a", ""}}), Calls({{"", "a", "{}"}}),
                                  Calls({{"", "a", "{}"}, {"", "b", ""}}), Calls({{"", "a", "{}"}, {"", "b", "{}"}})}) {
    for (const ToolCallDelta& t : d.Next(step).tool_calls) {
      if (!t.id.empty()) streamed.push_back(t.id);
    }
  }
  EXPECT_EQ(streamed, (std::vector<std::string>{"call_1", "call_2"}));
  EXPECT_EQ(d.ids(), streamed);
  // The final parse (ids empty, as a parser gives them) gets the streamed ids, however often
  // it is asked.
  ParsedReply done = d.WithIds(Calls({{"", "a", "{}"}, {"", "b", "{}"}}));
  ASSERT_EQ(done.tool_calls.size(), 2u);
  EXPECT_EQ(done.tool_calls[0].id, "call_1");
  EXPECT_EQ(done.tool_calls[1].id, "call_2");
  EXPECT_EQ(d.WithIds(Calls({{"", "a", "{}"}, {"", "b", "{}"}})).tool_calls[1].id, "call_2");
  EXPECT_EQ(ids.made, 2);
  // And the final parse sends nothing more.
  EXPECT_TRUE(d.Next(done).empty());
}

TEST(ReplyDeltas, WithIdsMakesIdsForCallsNeverStreamed) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  d.Next(Calls({{"", "a", "{}"}}));  // streamed: call_1
  ParsedReply done = d.WithIds(Calls({{"", "a", "{}"}, {"", "b", "{\"k\":2}"}, {"own", "c", "{}"}}));
  ASSERT_EQ(done.tool_calls.size(), 3u);
  EXPECT_EQ(done.tool_calls[0].id, "call_1");
  EXPECT_EQ(done.tool_calls[1].id, "call_2");
  EXPECT_EQ(done.tool_calls[2].id, "own");
  EXPECT_EQ(done.tool_calls[1].name, "b");
  EXPECT_EQ(done.tool_calls[1].arguments, "{\"k\":2}");
  EXPECT_EQ(d.ids(), (std::vector<std::string>{"call_1", "call_2", "own"}));
  EXPECT_EQ(ids.made, 2);
  // Again: the same ids, none made.
  ParsedReply again = d.WithIds(Calls({{"", "a", "{}"}, {"", "b", "{\"k\":2}"}, {"", "c", "{}"}}));
  EXPECT_EQ(again.tool_calls[2].id, "own");
  EXPECT_EQ(ids.made, 2);
}

TEST(ReplyDeltas, WithIdsWithoutAnyStreamNamesEveryCall) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  ParsedReply done = d.WithIds(Calls({{"", "a", "{}"}, {"", "b", "{}"}}, "text"));
  EXPECT_EQ(done.content, "text");
  ASSERT_EQ(done.tool_calls.size(), 2u);
  EXPECT_EQ(done.tool_calls[0].id, "call_1");
  EXPECT_EQ(done.tool_calls[1].id, "call_2");
  EXPECT_NE(done.tool_calls[0].id, done.tool_calls[1].id);
}

// openai_routes.cc streams a chat's end as `deltas.Next(deltas.WithIds(final parse))`: a
// call the partial parses never showed named (completed by the last token, or by a parser
// that only reports whole calls) must still go out, with the id WithIds gave it. Today
// WithIds records the call as sent (names_/arguments_), so Next sends nothing for it and
// the stream never shows the call the final message has. Enable once fixed (see the report:
// WithIds should only push ids_, and Next should test `i >= names_.size()`).
TEST(ReplyDeltas, ACallFirstSeenInTheFinalParseIsStillStreamedAfterWithIds) {
  IdMaker ids;
  ReplyDeltas d(ids.fn());
  d.Next(Calls({}, "Let me check."));
  ParsedReply done = d.WithIds(Calls({{"", "get_weather", "{\"city\":\"Paris\"}"}}, "Let me check."));
  ReplyDelta rest = d.Next(done);
  ASSERT_EQ(rest.tool_calls.size(), 1u);
  EXPECT_EQ(rest.tool_calls[0].id, done.tool_calls[0].id);
  EXPECT_EQ(rest.tool_calls[0].name, "get_weather");
  EXPECT_EQ(rest.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(ids.made, 1);
}

}  // namespace
}  // namespace llmd::http
