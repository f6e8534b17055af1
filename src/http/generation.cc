#include "http/generation.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace llmd::http {

sched::Job MakeGenerationJob(GenerationRequest& r, const config::DaemonConfig& c) {
  sched::Job job;
  job.sanitize = c.content_safety_check;
  if (r.chat) {
    sched::Conversation conversation{std::move(r.messages), r.format};
    const std::string model = r.model.value_or(config::DefaultModelName(c));
    const bool thinks = c.enable_thinking || std::find(c.thinking_models.begin(), c.thinking_models.end(), model) !=
                                                 c.thinking_models.end();
    conversation.format.enable_thinking = r.enable_thinking.value_or(thinks);
    auto& messages = conversation.messages;
    const bool has_system =
        std::any_of(messages.begin(), messages.end(), [](const chat::Message& m) { return m.role == "system"; });
    if (!has_system && !c.system_prompt.empty()) messages.insert(messages.begin(), {"system", c.system_prompt});
    job.prompt = std::move(conversation);
  } else {
    job.prompt = sched::RawCompletion{std::move(r.prompt)};
  }
  job.options.max_tokens = static_cast<int32_t>(std::min(r.max_tokens.value_or(c.max_new_tokens), c.max_new_tokens));
  engine::SamplingParams& p = job.options.sampling;
  p = c.sampling;
  if (r.temperature) p.temperature = *r.temperature;
  if (r.top_p) p.top_p = *r.top_p;
  if (r.top_k) p.top_k = *r.top_k;
  if (r.repeat_penalty) p.repeat_penalty = *r.repeat_penalty;
  if (r.presence_penalty) p.presence_penalty = *r.presence_penalty;
  if (r.frequency_penalty) p.frequency_penalty = *r.frequency_penalty;
  if (r.seed) p.seed = *r.seed;
  p.logit_bias = r.logit_bias;
  p.ignore_eos = r.ignore_eos;
  p.top_logprobs = r.top_logprobs;
  // A request may draft less than the server's draft_max, never more (as max_tokens is capped).
  if (r.draft_max) {
    job.options.draft_max =
        static_cast<int32_t>(std::min<uint32_t>(*r.draft_max, static_cast<uint32_t>(c.engine.speculative.draft_max)));
  }
  job.stop = r.stop;
  job.stream = r.stream;
  return job;
}

std::string GuardedPrompt(const GenerationRequest& r) {
  if (!r.chat) return r.prompt;
  std::string last;
  for (const auto& m : r.messages) {
    if (m.role == "user") last = m.content;
  }
  return last;
}

FinalReply ParseFinalReply(const engine::Completion& done, ReplyDeltas& deltas) {
  FinalReply out;
  out.cut = done.stats.finish_reason != engine::FinishReason::kStop;
  if (!done.parser) {
    out.reply.content = done.text;
    return out;
  }
  out.reply = done.parser->Parse(done.text, /*partial=*/false);
  auto broken = [](const chat::ToolCall& call) { return !nlohmann::json::accept(call.arguments); };
  auto& calls = out.reply.tool_calls;
  if (out.cut) {
    std::erase_if(calls, broken);  // the call the token limit cut short
  } else if (std::any_of(calls.begin(), calls.end(), broken)) {
    out.reply = engine::ParsedReply{done.text, {}, {}};  // a malformed call is text, as written
  }
  out.reply = deltas.WithIds(std::move(out.reply));
  out.tool_calls = !out.reply.tool_calls.empty() && !out.cut;
  return out;
}

}  // namespace llmd::http
