#include "sched/job_settings.h"

#include <algorithm>

namespace llmd::sched {

void ApplyGenerationSettings(const GenerationSettings& s, const config::DaemonConfig& c, Job* job) {
  job->sanitize = c.content_safety_check;
  static const config::ModelGenerationDefaults kNone;
  const config::ModelGenerationDefaults* found = config::FindModelDefaults(c, s.model);
  const config::ModelGenerationDefaults& m = found != nullptr ? *found : kNone;  // the model's manifest's
  job->options.max_tokens =
      static_cast<int32_t>(std::min(s.max_tokens.value_or(m.max_tokens.value_or(c.max_new_tokens)), c.max_new_tokens));
  // The request's num_ctx, else its model's; the worker holds either to the model's context.
  job->options.context_tokens = s.context_tokens.value_or(m.context_tokens.value_or(0));
  engine::SamplingParams& p = job->options.sampling;
  p = c.sampling;
  if (m.temperature) p.temperature = *m.temperature;
  if (m.top_p) p.top_p = *m.top_p;
  if (m.top_k) p.top_k = *m.top_k;
  if (m.repeat_penalty) p.repeat_penalty = *m.repeat_penalty;
  if (m.presence_penalty) p.presence_penalty = *m.presence_penalty;
  if (m.frequency_penalty) p.frequency_penalty = *m.frequency_penalty;
  if (m.seed) p.seed = *m.seed;
  if (s.temperature) p.temperature = *s.temperature;
  if (s.top_p) p.top_p = *s.top_p;
  if (s.top_k) p.top_k = *s.top_k;
  if (s.repeat_penalty) p.repeat_penalty = *s.repeat_penalty;
  if (s.presence_penalty) p.presence_penalty = *s.presence_penalty;
  if (s.frequency_penalty) p.frequency_penalty = *s.frequency_penalty;
  if (s.seed) p.seed = *s.seed;
  // A request may draft less than the server's draft_max, never more (as max_tokens is capped).
  if (s.draft_max) {
    job->options.draft_max =
        static_cast<int32_t>(std::min<uint32_t>(*s.draft_max, static_cast<uint32_t>(c.engine.speculative.draft_max)));
  }
  job->request_class = ResolveClass(c.request_classes, s.peer, s.request_class);
  job->peer_uid = s.peer.uid;
  if (s.first_token_deadline_ms) job->first_token_deadline_ms = *s.first_token_deadline_ms;
}

}  // namespace llmd::sched
