// The block life both streaming APIs share (BlockStream), and the event order each API makes
// of it for the same replies: Anthropic Messages and Responses must open, append and close
// the same blocks at the same points, only under their own names.
#include "http/block_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/anthropic/anthropic_api.h"
#include "http/responses/responses_api.h"

namespace llmd::http {
namespace {

using nlohmann::json;

// Words joined by spaces (built with +=, as GCC 12 warns wrongly on "literal" + string).
template <typename... T>
std::string Words(const T&... words) {
  std::string s;
  ((s += s.empty() ? "" : " ", s += words), ...);
  return s;
}

// Each event as one line: "open 0 text", "append 0 text Hel", "close 0 text".
class Recorder : public BlockEvents {
 public:
  void Opened(size_t index, const Block& block) override {
    lines.push_back(Words("open", At(index, block)));
  }
  void Appended(size_t index, const Block& block, const std::string& piece) override {
    lines.push_back(Words("append", At(index, block), piece));
  }
  void Closed(size_t index, const Block& block) override {
    lines.push_back(Words("close", At(index, block)));
  }
  std::vector<std::string> lines;

 private:
  static std::string At(size_t index, const Block& block) {
    static const char* const kKinds[] = {"reasoning", "text", "call"};
    return Words(std::to_string(index), kKinds[static_cast<int>(block.kind)]);
  }
};

ToolCallDelta Call(size_t index, std::string id, std::string name, std::string arguments) {
  ToolCallDelta t;
  t.index = index;
  t.id = std::move(id);
  t.name = std::move(name);
  t.arguments = std::move(arguments);
  return t;
}

// A reply as a stream sees it: the deltas of its partial parses, then its final parse.
struct Reply {
  std::vector<ReplyDelta> deltas;
  engine::ParsedReply final;
};

Reply TextOnly() { return {{{"", "Hel", {}}, {"", "lo", {}}}, {"Hello", "", {}}}; }
Reply ReasoningThenText() { return {{{"Hm", "", {}}, {"", "Yes", {}}}, {"Yes", "Hm", {}}}; }
Reply TextThenCall() {
  return {{{"", "Look.", {}}, {"", "", {Call(0, "c1", "f", "{}")}}},
          {"Look.", "", {{"c1", "f", "{}"}}}};
}
Reply TwoCalls() {
  return {{{"", "", {Call(0, "c1", "f", "{}")}}, {"", "", {Call(1, "c2", "g", "{}")}}},
          {"", "", {{"c1", "f", "{}"}, {"c2", "g", "{}"}}}};
}
Reply ArgumentsInPieces() {
  return {{{"", "", {Call(0, "c1", "f", "{\"a")}},
           {"", "", {Call(0, "", "", "\":")}},
           {"", "", {Call(0, "", "", "1}")}}},
          {"", "", {{"c1", "f", "{\"a\":1}"}}}};
}

std::vector<std::string> BlockEventsOf(const Reply& reply) {
  BlockStream stream;
  Recorder rec;
  for (const ReplyDelta& d : reply.deltas) stream.Next(d, rec);
  stream.CatchUp(reply.final, rec);
  stream.Close(rec);
  return rec.lines;
}

using Lines = std::vector<std::string>;

TEST(BlockStream, TextOnly) {
  EXPECT_EQ(BlockEventsOf(TextOnly()),
            (Lines{"open 0 text", "append 0 text Hel", "append 0 text lo", "close 0 text"}));
}

TEST(BlockStream, ReasoningThenText) {
  EXPECT_EQ(BlockEventsOf(ReasoningThenText()),
            (Lines{"open 0 reasoning", "append 0 reasoning Hm", "close 0 reasoning", "open 1 text",
                   "append 1 text Yes", "close 1 text"}));
}

TEST(BlockStream, TextThenACall) {
  EXPECT_EQ(BlockEventsOf(TextThenCall()),
            (Lines{"open 0 text", "append 0 text Look.", "close 0 text", "open 1 call",
                   "append 1 call {}", "close 1 call"}));
}

TEST(BlockStream, TwoCalls) {
  EXPECT_EQ(BlockEventsOf(TwoCalls()), (Lines{"open 0 call", "append 0 call {}", "close 0 call",
                                              "open 1 call", "append 1 call {}", "close 1 call"}));
}

TEST(BlockStream, ArgumentsInPieces) {
  EXPECT_EQ(BlockEventsOf(ArgumentsInPieces()),
            (Lines{"open 0 call", "append 0 call {\"a", "append 0 call \":", "append 0 call 1}",
                   "close 0 call"}));
}

TEST(BlockStream, TheFinalParseReleasesWhatWasHeldBack) {
  BlockStream stream;
  Recorder rec;
  stream.Next({"", "Answer", {}}, rec);
  stream.CatchUp({"Answer!", "", {{"", "f", "{}"}}}, rec);
  EXPECT_EQ(rec.lines, (Lines{"open 0 text", "append 0 text Answer", "append 0 text !",
                              "close 0 text", "open 1 call", "append 1 call {}"}));
  EXPECT_EQ(stream.open(), 1u);  // the last block stays open for the API to close
}

// The decision both APIs rest on: a closed call's block keeps arguments that come after it
// closed (no event says them; the record is the whole call).
TEST(BlockStream, AClosedCallKeepsItsLateArguments) {
  BlockStream stream;
  Recorder rec;
  stream.Next({"", "", {Call(0, "c1", "f", "{\"a")}}, rec);
  stream.Next({"", "", {Call(1, "c2", "g", "{}"), Call(0, "", "", "\":1}")}}, rec);
  stream.CatchUp({"", "", {{"c1", "f", "{\"a\":1}"}, {"c2", "g", "{}"}}}, rec);
  EXPECT_EQ(rec.lines, (Lines{"open 0 call", "append 0 call {\"a", "close 0 call", "open 1 call",
                              "append 1 call {}"}));
  ASSERT_EQ(stream.blocks().size(), 2u);
  EXPECT_EQ(stream.blocks()[0].text, "{\"a\":1}");
  EXPECT_EQ(stream.blocks()[0].call_id, "c1");
  EXPECT_EQ(stream.blocks()[1].number, 1u);
}

TEST(BlockStream, TextAfterACallIsANewBlockOfItsKind) {
  BlockStream stream;
  Recorder rec;
  stream.Next({"", "A", {Call(0, "c1", "f", "{}")}}, rec);
  stream.Next({"", "B", {}}, rec);
  ASSERT_EQ(stream.blocks().size(), 3u);
  EXPECT_EQ(stream.blocks()[0].number, 0u);
  EXPECT_EQ(stream.blocks()[2].kind, BlockKind::kText);
  EXPECT_EQ(stream.blocks()[2].number, 1u);  // Responses' "msg_X_1"
}

TEST(BlockStream, AnAbandonedBlockIsNeverClosed) {
  BlockStream stream;
  Recorder rec;
  stream.Next({"", "cut", {}}, rec);
  stream.Abandon();
  stream.Close(rec);
  EXPECT_EQ(rec.lines, (Lines{"open 0 text", "append 0 text cut"}));
  EXPECT_EQ(stream.open(), BlockStream::kNone);
}

TEST(BlockStream, AWholeReplyIsReasoningTextThenCalls) {
  const BlockStream whole = WholeReply({"T", "R", {{"", "f", "{}"}, {"c2", "g", ""}}});
  ASSERT_EQ(whole.blocks().size(), 4u);
  EXPECT_EQ(whole.blocks()[0].kind, BlockKind::kReasoning);
  EXPECT_EQ(whole.blocks()[1].text, "T");
  EXPECT_EQ(whole.blocks()[2].name, "f");
  EXPECT_EQ(whole.blocks()[3].number, 1u);
  EXPECT_TRUE(WholeReply({}).blocks().empty());
}

// ---------------------------------------------------------------------------------------
// Each API's names for the same lives: the event types in order, with the block's index.

// "content_block_delta 1 input_json_delta": Anthropic's type, index and delta type.
Lines AnthropicEvents(const Reply& reply) {
  AnthropicStream stream(MessageContext{"msg_abc", "qwen"});
  std::vector<SseEvent> events;
  for (const ReplyDelta& d : reply.deltas) {
    for (SseEvent& e : stream.Next(d)) events.push_back(std::move(e));
  }
  MessageEnd end;
  for (SseEvent& e : stream.Finish(reply.final, end)) events.push_back(std::move(e));
  Lines lines;
  for (const SseEvent& e : events) {
    const json data = json::parse(e.data);
    EXPECT_EQ(data["type"], e.event);
    std::string line = e.event;
    if (data.contains("index")) line = Words(line, data["index"].dump());
    if (data.contains("delta") && data["delta"].contains("type")) {
      line = Words(line, data["delta"]["type"].get<std::string>());
    }
    lines.push_back(line);
  }
  return lines;
}

// "response.output_text.delta 0": Responses' type and output_index, numbered in sequence.
Lines ResponsesEvents(const Reply& reply) {
  ResponsesStream stream(ResponseContext{"resp_abc", 0, "qwen"});
  std::vector<SseEvent> events;
  for (const ReplyDelta& d : reply.deltas) {
    for (SseEvent& e : stream.Next(d)) events.push_back(std::move(e));
  }
  for (SseEvent& e : stream.Finish(reply.final, {}, "completed")) events.push_back(std::move(e));
  Lines lines;
  for (size_t i = 0; i < events.size(); ++i) {
    const json data = json::parse(events[i].data);
    EXPECT_EQ(data["type"], events[i].event);
    EXPECT_EQ(data["sequence_number"], i);
    std::string line = events[i].event;
    if (data.contains("output_index")) line = Words(line, data["output_index"].dump());
    lines.push_back(line);
  }
  return lines;
}

const Lines kMessageStart = {"message_start"};
const Lines kMessageEnd = {"message_delta", "message_stop"};
const Lines kResponseStart = {"response.created", "response.in_progress"};
const Lines kResponseEnd = {"response.completed"};

Lines Cat(std::initializer_list<Lines> parts) {
  Lines all;
  for (const Lines& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Anthropic: a text block at `i` with `deltas` text deltas.
Lines AnthropicText(int i, int deltas, const char* block = "text_delta") {
  const std::string at = std::to_string(i);
  Lines l = {Words("content_block_start", at)};
  for (int n = 0; n < deltas; ++n) l.push_back(Words("content_block_delta", at, block));
  if (std::string(block) == "thinking_delta")
    l.push_back(Words("content_block_delta", at, "signature_delta"));
  l.push_back(Words("content_block_stop", at));
  return l;
}

// Responses: a message or reasoning item at `i` with `deltas` deltas.
Lines ResponsesText(int i, int deltas, const char* kind = "output_text") {
  const std::string at = std::to_string(i);
  const std::string type = std::string("response.") += kind;
  Lines l = {Words("response.output_item.added", at), Words("response.content_part.added", at)};
  for (int n = 0; n < deltas; ++n) l.push_back(Words(type + ".delta", at));
  l.insert(l.end(), {Words(type + ".done", at), Words("response.content_part.done", at),
                     Words("response.output_item.done", at)});
  return l;
}

Lines AnthropicCall(int i, int deltas) { return AnthropicText(i, deltas, "input_json_delta"); }

Lines ResponsesCall(int i, int deltas) {
  const std::string at = std::to_string(i);
  Lines l = {Words("response.output_item.added", at)};
  for (int n = 0; n < deltas; ++n) l.push_back(Words("response.function_call_arguments.delta", at));
  l.insert(l.end(), {Words("response.function_call_arguments.done", at),
                     Words("response.output_item.done", at)});
  return l;
}

TEST(BlockStreamNames, TextOnly) {
  EXPECT_EQ(AnthropicEvents(TextOnly()), Cat({kMessageStart, AnthropicText(0, 2), kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(TextOnly()), Cat({kResponseStart, ResponsesText(0, 2), kResponseEnd}));
}

TEST(BlockStreamNames, ReasoningThenText) {
  EXPECT_EQ(AnthropicEvents(ReasoningThenText()),
            Cat({kMessageStart, AnthropicText(0, 1, "thinking_delta"), AnthropicText(1, 1),
                 kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(ReasoningThenText()),
            Cat({kResponseStart, ResponsesText(0, 1, "reasoning_text"), ResponsesText(1, 1),
                 kResponseEnd}));
}

TEST(BlockStreamNames, TextThenACall) {
  EXPECT_EQ(AnthropicEvents(TextThenCall()),
            Cat({kMessageStart, AnthropicText(0, 1), AnthropicCall(1, 1), kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(TextThenCall()),
            Cat({kResponseStart, ResponsesText(0, 1), ResponsesCall(1, 1), kResponseEnd}));
}

TEST(BlockStreamNames, TwoCalls) {
  EXPECT_EQ(AnthropicEvents(TwoCalls()),
            Cat({kMessageStart, AnthropicCall(0, 1), AnthropicCall(1, 1), kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(TwoCalls()),
            Cat({kResponseStart, ResponsesCall(0, 1), ResponsesCall(1, 1), kResponseEnd}));
}

TEST(BlockStreamNames, ArgumentsInPieces) {
  EXPECT_EQ(AnthropicEvents(ArgumentsInPieces()),
            Cat({kMessageStart, AnthropicCall(0, 3), kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(ArgumentsInPieces()),
            Cat({kResponseStart, ResponsesCall(0, 3), kResponseEnd}));
}

// The drift the shared record settles: late arguments of a closed call are in Responses'
// final object (built from the blocks), and in no Anthropic event after content_block_stop.
TEST(BlockStreamNames, LateArgumentsOfAClosedCall) {
  const Reply late = {{{"", "", {Call(0, "c1", "f", "{\"a")}},
                       {"", "", {Call(1, "c2", "g", "{}"), Call(0, "", "", "\":1}")}}},
                      {"", "", {{"c1", "f", "{\"a\":1}"}, {"c2", "g", "{}"}}}};
  EXPECT_EQ(AnthropicEvents(late),
            Cat({kMessageStart, AnthropicCall(0, 1), AnthropicCall(1, 1), kMessageEnd}));
  EXPECT_EQ(ResponsesEvents(late),
            Cat({kResponseStart, ResponsesCall(0, 1), ResponsesCall(1, 1), kResponseEnd}));

  ResponsesStream stream(ResponseContext{"resp_abc", 0, "qwen"});
  for (const ReplyDelta& d : late.deltas) stream.Next(d);
  const std::vector<SseEvent> end = stream.Finish(late.final, {}, "completed");
  const json completed = json::parse(end.back().data);
  EXPECT_EQ(completed["response"]["output"][0]["arguments"], "{\"a\":1}");
}

}  // namespace
}  // namespace llmd::http
