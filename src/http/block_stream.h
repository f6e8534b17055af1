// BlockStream: the life of a streamed reply's blocks, whatever API shows them. A reply is a
// sequence of typed blocks (reasoning, text, tool calls) in the order the model makes them,
// one open at a time: a block opens when text of a new kind (or a new call) arrives, grows by
// appended pieces, and closes when the next block opens or the reply ends. Anthropic Messages
// calls them content blocks, Responses output items; both APIs are naming policies over this
// one life (BlockEvents), so their streams cannot drift apart.
//
// Fed ReplyDelta values (ReplyDeltas::Next over successive partial parses), then CatchUp with
// the final parse for what the partial parses held back.
//
// What a closed call keeps: its block records every argument fragment it is given, also those
// that arrive after it closed (a parser that releases them only once the next call began).
// They cannot be streamed any more, so no event says them; but the record is the whole call,
// so what is built from the blocks (Responses' final object, a whole Message) has it. Each API
// shows a closed block as it specifies: Responses' output_item.done carries the item as it
// stood when it closed, Anthropic's content_block_stop carries nothing.
//
// Thread-safety: one thread.
#ifndef LLMD_HTTP_BLOCK_STREAM_H_
#define LLMD_HTTP_BLOCK_STREAM_H_

#include <cstddef>
#include <string>
#include <vector>

#include "engine/types.h"
#include "http/reply_deltas.h"

namespace llmd::http {

enum class BlockKind { kReasoning, kText, kToolCall };

struct Block {
  BlockKind kind = BlockKind::kText;
  // Reasoning and text: how many blocks of its kind came before (a reply can have text, a
  // call, then text again); a call: its index in the reply (ToolCallDelta::index).
  size_t number = 0;
  // The reasoning or the text as streamed; a call's arguments, all it was given.
  std::string text;
  // A call's id and name, as its first delta gave them (the id may be empty: the API makes one).
  std::string call_id, name;
};

// What an API does at each step of a block's life; `index` is the block's place in the reply
// (Anthropic's content block index, Responses' output_index). The defaults do nothing.
class BlockEvents {
 public:
  virtual ~BlockEvents() = default;
  virtual void Opened(size_t /*index*/, const Block& /*block*/) {}
  // `piece` has just been added to block.text.
  virtual void Appended(size_t /*index*/, const Block& /*block*/, const std::string& /*piece*/) {}
  virtual void Closed(size_t /*index*/, const Block& /*block*/) {}
};

class BlockStream {
 public:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  // A delta's reasoning, then its text, then its calls (a call's first delta opens its block).
  void Next(const ReplyDelta& delta, BlockEvents& events);
  // The final parse: the reasoning and text beyond what was streamed, calls never seen, and
  // arguments beyond those recorded. The last block stays open.
  void CatchUp(const engine::ParsedReply& reply, BlockEvents& events);
  // Opens an empty block of a text kind, closing the open one (Responses' empty message).
  void OpenText(BlockKind kind, BlockEvents& events);
  // Closes the open block, if one is.
  void Close(BlockEvents& events);
  // Forgets the open block without closing it: a failed reply leaves it unfinished.
  void Abandon() { open_ = kNone; }

  const std::vector<Block>& blocks() const { return blocks_; }
  size_t open() const { return open_; }  // kNone when none
  bool Has(BlockKind kind) const;

 private:
  void Open(Block block, BlockEvents& events);
  void AppendText(BlockKind kind, const std::string& text, BlockEvents& events);
  void OpenCall(size_t index, const std::string& id, const std::string& name, BlockEvents& events);
  void AppendArguments(size_t index, const std::string& arguments, BlockEvents& events);
  bool CallKnown(size_t index) const {
    return index < call_blocks_.size() && call_blocks_[index] != kNone;
  }
  std::string Streamed(BlockKind kind) const;

  std::vector<Block> blocks_;
  size_t open_ = kNone;
  std::vector<size_t> call_blocks_;  // per call index: its block, or kNone
};

// The blocks of a whole reply, as a stream fed it ends with (its last block still open):
// what non-streamed replies are rendered from, so that they and the streams show one reply
// the same way.
BlockStream WholeReply(const engine::ParsedReply& reply);

}  // namespace llmd::http

#endif  // LLMD_HTTP_BLOCK_STREAM_H_
