#include "http/generation.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sched/job_settings.h"

namespace llmd::http {

sched::Job MakeGenerationJob(GenerationRequest& r, const config::DaemonConfig& c, const PeerIdentity& peer) {
  sched::Job job;
  if (r.chat) {
    sched::Conversation conversation{std::move(r.messages), r.format};
    const std::string model = r.model.value_or(config::DefaultModelName(c));
    const bool thinks = c.enable_thinking || std::find(c.thinking_models.begin(), c.thinking_models.end(), model) !=
                                                 c.thinking_models.end();
    conversation.format.enable_thinking = r.enable_thinking.value_or(thinks);
    auto& messages = conversation.messages;
    const bool has_system =
        std::any_of(messages.begin(), messages.end(), [](const chat::Message& m) { return m.role == "system"; });
    // The model's own SYSTEM (its manifest's), as Ollama puts it in. Not the daemon's
    // `system_prompt`: that is the native socket's default (the seed's clients send none). A
    // client of these APIs gets the prompt its messages make, as from llama-server, and not an
    // instruction it did not write ("Answer briefly." cut answers short, and its 14 tokens were
    // computed on every cold prompt).
    const config::ModelGenerationDefaults* defaults = config::FindModelDefaults(c, model);
    if (!has_system && defaults != nullptr && defaults->system && !defaults->system->empty()) {
      messages.insert(messages.begin(), {"system", *defaults->system});
    }
    job.prompt = std::move(conversation);
  } else {
    job.prompt = sched::RawCompletion{std::move(r.prompt)};
  }
  sched::GenerationSettings settings;
  settings.max_tokens = r.max_tokens;
  settings.temperature = r.temperature;
  settings.top_p = r.top_p;
  settings.top_k = r.top_k;
  settings.repeat_penalty = r.repeat_penalty;
  settings.presence_penalty = r.presence_penalty;
  settings.frequency_penalty = r.frequency_penalty;
  settings.seed = r.seed;
  settings.draft_max = r.draft_max;
  settings.request_class = r.request_class;
  settings.first_token_deadline_ms = r.first_token_deadline_ms;
  settings.peer = peer;
  settings.model = r.model;
  if (r.context_tokens) settings.context_tokens = static_cast<int32_t>(*r.context_tokens);
  sched::ApplyGenerationSettings(settings, c, &job);
  engine::SamplingParams& p = job.options.sampling;
  p.logit_bias = r.logit_bias;
  p.ignore_eos = r.ignore_eos;
  p.top_logprobs = r.top_logprobs;
  job.stop = r.stop;
  if (job.stop.empty()) {  // the model's own PARAMETER stop lines
    if (const config::ModelGenerationDefaults* d = config::FindModelDefaults(c, r.model)) job.stop = d->stop;
  }
  job.stream = r.stream;
  job.keep_alive_ms = r.keep_alive_ms;
  job.overflow = r.overflow.value_or(engine::ContextOverflow::kError);
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

std::optional<std::string> MatchedStopSequence(const std::vector<std::string>& stops, std::string_view generated,
                                               size_t last_token_bytes) {
  const size_t tail = generated.size() - std::min(last_token_bytes, generated.size());  // the last token's start
  std::optional<std::string> best;
  size_t best_at = std::string_view::npos;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    // The first occurrence that ends inside the last token.
    const size_t from = tail + 1 >= s.size() ? tail + 1 - s.size() : 0;
    const size_t at = generated.find(s, from);
    if (at == std::string_view::npos) continue;
    if (at < best_at || (at == best_at && s.size() < best->size())) {
      best = s;
      best_at = at;
    }
  }
  return best;
}

}  // namespace llmd::http
