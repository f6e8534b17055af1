#include "http/openai/openai_sink.h"

#include <utility>

#include "http/json_reply.h"
#include "http/openai/openai_render.h"

namespace llmd::http {

using nlohmann::json;

OpenAiSink::OpenAiSink(Responder& out, OpenAiReplyContext context)
    : out_(out), sse_(out), ctx_(std::move(context)), text_bytes_(ctx_.n, 0) {}

json OpenAiSink::Envelope(json choices) const {
  const char* object = ctx_.chat ? (ctx_.stream ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  json j = {{"id", ctx_.id}, {"object", object}, {"created", ctx_.created}, {"model", ctx_.model},
            {"choices", std::move(choices)}};
  if (ctx_.stream && ctx_.include_usage) j["usage"] = nullptr;
  return j;
}

json OpenAiSink::Chunk(uint32_t choice, json delta_or_text, json logprobs, const char* finish) const {
  json one = {{"index", choice}, {ctx_.chat ? "delta" : "text", std::move(delta_or_text)},
              {"logprobs", std::move(logprobs)}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
  return Envelope(json::array({std::move(one)}));
}

json OpenAiSink::Logprobs(uint32_t choice, const std::vector<engine::TokenLogprob>& tokens) {
  if (!ctx_.logprobs) return nullptr;
  if (ctx_.chat) return ChatLogprobs(tokens);
  json j = CompletionLogprobs(tokens, text_bytes_[choice]);
  for (const auto& t : tokens) text_bytes_[choice] += t.text.size();
  return j;
}

bool OpenAiSink::BeginStream() {
  if (streaming_) return stream_ok_;
  streaming_ = true;
  stream_ok_ = sse_.Begin();
  for (uint32_t i = 0; ctx_.chat && i < ctx_.n && stream_ok_; ++i) {
    stream_ok_ = sse_.Event(Dump(Chunk(i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
  }
  return stream_ok_;
}

bool OpenAiSink::Send(const json& chunk) { return BeginStream() && (stream_ok_ = sse_.Event(Dump(chunk))); }

bool OpenAiSink::Piece(const ReplyPiece& piece) {
  json lp = Logprobs(piece.choice, piece.logprobs);
  if (piece.delta.empty() && lp.is_null()) return BeginStream();  // held back for now
  json body = ctx_.chat ? ChatDelta(piece.delta) : json(piece.delta.content);
  return Send(Chunk(piece.choice, std::move(body), std::move(lp), nullptr));
}

const char* OpenAiSink::FinishReason(const ChoiceEnd& choice) const {
  if (choice.refused) return "content_filter";  // the refused answer's text is empty
  if (choice.final.tool_calls) return "tool_calls";
  return choice.completion.stats.finish_reason == engine::FinishReason::kLength ? "length" : "stop";
}

int OpenAiSink::Finish(ExchangeEnd& end) {
  if (ctx_.stream) return FinishStream(end);
  json list = json::array();
  for (ChoiceEnd& choice : end.choices) {
    json lp = Logprobs(choice.index, choice.completion.logprobs);
    json one = {{"index", choice.index}, {"logprobs", std::move(lp)}, {"finish_reason", FinishReason(choice)}};
    if (ctx_.chat) one["message"] = AssistantMessage(choice.final.reply);
    else one["text"] = choice.final.reply.content;
    list.push_back(std::move(one));
  }
  json j = Envelope(std::move(list));
  j["usage"] = OpenAiUsage(end.usage);
  return out_.Send(200, kJsonType, Dump(j)) ? 200 : 0;
}

int OpenAiSink::FinishStream(ExchangeEnd& end) {
  if (!BeginStream()) return 0;
  for (ChoiceEnd& choice : end.choices) {
    // What the last partial parse still held back (a call completed by the last token).
    if (!choice.rest.empty() && !Send(Chunk(choice.index, ChatDelta(choice.rest), nullptr, nullptr))) return 0;
    if (!Send(Chunk(choice.index, ctx_.chat ? json::object() : json(""), nullptr, FinishReason(choice)))) {
      return 0;
    }
  }
  if (ctx_.include_usage) {
    json usage = Envelope(json::array());
    usage["usage"] = OpenAiUsage(end.usage);
    if (!Send(usage)) return 0;
  }
  return sse_.Done() ? 200 : 0;
}

int OpenAiSink::Fail(const ApiError& e) {
  if (!streaming_) return SendError(out_, e, OpenAiErrorBody);
  sse_.Event(Dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}}));
  sse_.Done();
  return e.status;
}

}  // namespace llmd::http
