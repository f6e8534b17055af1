#include "http/block_stream.h"

#include <algorithm>
#include <utility>

#include "http/api_text.h"

namespace llmd::http {

void BlockStream::Next(const ReplyDelta& delta, BlockEvents& events) {
  AppendText(BlockKind::kReasoning, delta.reasoning_content, events);
  AppendText(BlockKind::kText, delta.content, events);
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (!CallKnown(call.index)) OpenCall(call.index, call.id, call.name, events);
    AppendArguments(call.index, call.arguments, events);
  }
}

void BlockStream::CatchUp(const engine::ParsedReply& reply, BlockEvents& events) {
  AppendText(BlockKind::kReasoning,
             Extension(Streamed(BlockKind::kReasoning), reply.reasoning_content), events);
  AppendText(BlockKind::kText, Extension(Streamed(BlockKind::kText), reply.content), events);
  for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
    const chat::ToolCall& call = reply.tool_calls[i];
    if (!CallKnown(i)) OpenCall(i, call.id, call.name, events);
    AppendArguments(i, Extension(blocks_[call_blocks_[i]].text, call.arguments), events);
  }
}

void BlockStream::OpenText(BlockKind kind, BlockEvents& events) {
  const auto before =
      std::count_if(blocks_.begin(), blocks_.end(), [&](const Block& b) { return b.kind == kind; });
  Open({kind, static_cast<size_t>(before), "", "", ""}, events);
}

void BlockStream::Close(BlockEvents& events) {
  if (open_ == kNone) return;
  const size_t index = std::exchange(open_, kNone);
  events.Closed(index, blocks_[index]);
}

bool BlockStream::Has(BlockKind kind) const {
  return std::any_of(blocks_.begin(), blocks_.end(),
                     [&](const Block& b) { return b.kind == kind; });
}

void BlockStream::Open(Block block, BlockEvents& events) {
  Close(events);
  blocks_.push_back(std::move(block));
  open_ = blocks_.size() - 1;
  events.Opened(open_, blocks_[open_]);
}

void BlockStream::AppendText(BlockKind kind, const std::string& text, BlockEvents& events) {
  if (text.empty()) return;
  if (open_ == kNone || blocks_[open_].kind != kind) OpenText(kind, events);
  blocks_[open_].text += text;
  events.Appended(open_, blocks_[open_], text);
}

void BlockStream::OpenCall(size_t index, const std::string& id, const std::string& name,
                           BlockEvents& events) {
  if (call_blocks_.size() <= index) call_blocks_.resize(index + 1, kNone);
  Open({BlockKind::kToolCall, index, "", id, name}, events);
  call_blocks_[index] = open_;
}

// The record takes every fragment (see the header: a closed call keeps its whole arguments);
// only the open block's are an event, as what a closed block said is said.
void BlockStream::AppendArguments(size_t index, const std::string& arguments, BlockEvents& events) {
  if (arguments.empty() || !CallKnown(index)) return;
  const size_t block = call_blocks_[index];
  blocks_[block].text += arguments;
  if (block == open_) events.Appended(block, blocks_[block], arguments);
}

// All the text of a kind, across its blocks: what the final parse's text is compared with.
std::string BlockStream::Streamed(BlockKind kind) const {
  std::string text;
  for (const Block& b : blocks_) {
    if (b.kind == kind) text += b.text;
  }
  return text;
}

BlockStream WholeReply(const engine::ParsedReply& reply) {
  BlockStream blocks;
  BlockEvents unseen;  // no stream watches
  blocks.CatchUp(reply, unseen);
  return blocks;
}

}  // namespace llmd::http
