#include "http/openai/openai_render.h"

#include "http/json_reply.h"

namespace llmd::http {
namespace {

using nlohmann::json;

json Bytes(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(c);
  return bytes;
}

json FunctionCall(const std::string& name, const std::string& arguments) {
  return {{"name", name}, {"arguments", arguments}};
}

}  // namespace

json AssistantMessage(const engine::ParsedReply& reply) {
  json m = {{"role", "assistant"}};
  m["content"] = reply.content.empty() && !reply.tool_calls.empty() ? json(nullptr) : json(reply.content);
  if (!reply.reasoning_content.empty()) m["reasoning_content"] = reply.reasoning_content;
  if (!reply.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& c : reply.tool_calls) {
      calls.push_back({{"id", c.id}, {"type", "function"}, {"function", FunctionCall(c.name, c.arguments)}});
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

json ChatDelta(const ReplyDelta& delta) {
  json d = json::object();
  if (!delta.content.empty()) d["content"] = delta.content;
  if (!delta.reasoning_content.empty()) d["reasoning_content"] = delta.reasoning_content;
  if (!delta.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& t : delta.tool_calls) {
      json c = {{"index", t.index}};
      json fn = {{"arguments", t.arguments}};
      if (!t.id.empty()) {
        c["id"] = t.id;
        c["type"] = "function";
        fn["name"] = t.name;
      }
      c["function"] = std::move(fn);
      calls.push_back(std::move(c));
    }
    d["tool_calls"] = std::move(calls);
  }
  return d;
}

json ChatLogprobs(const std::vector<engine::TokenLogprob>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    json top = json::array();
    for (const auto& [text, logprob] : t.top) {
      top.push_back({{"token", text}, {"logprob", logprob}, {"bytes", Bytes(text)}});
    }
    content.push_back({{"token", t.text}, {"logprob", t.logprob}, {"bytes", Bytes(t.text)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json OpenAiUsage(const engine::GenerationStats& st) {
  json usage = {{"prompt_tokens", st.prompt_tokens},
                {"completion_tokens", st.generated_tokens},
                {"total_tokens", st.prompt_tokens + st.generated_tokens},
                {"prompt_tokens_details", {{"cached_tokens", st.cached_tokens}}}};
  // llmd's extension, only where speculative decoding drafted (as reasoning_content is only
  // there when the model thought), so a reply without it reads as OpenAI's exactly.
  if (st.draft_tokens > 0) {
    usage["draft_tokens"] = st.draft_tokens;
    usage["accepted_draft_tokens"] = st.accepted_draft_tokens;
  }
  // Likewise only where overflow drop_oldest dropped turns to fit the context.
  if (st.dropped_turns > 0) {
    usage["dropped_tokens"] = st.dropped_tokens;
    usage["dropped_turns"] = st.dropped_turns;
  }
  return usage;
}

json CompletionLogprobs(const std::vector<engine::TokenLogprob>& tokens, size_t offset) {
  json text = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const auto& t : tokens) {
    text.push_back(t.text);
    logprobs.push_back(t.logprob);
    json alternatives = json::object();
    for (const auto& [alt, logprob] : t.top) alternatives[alt] = logprob;
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += t.text.size();
  }
  return {{"tokens", text}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

std::string OpenAiErrorBody(const ApiError& e) {
  const nlohmann::json param = e.param != nullptr ? nlohmann::json(e.param) : nlohmann::json(nullptr);
  return Dump({{"error", {{"message", e.message}, {"type", e.type}, {"param", param}, {"code", e.code}}}});
}

}  // namespace llmd::http
