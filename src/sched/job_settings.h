// GenerationSettings: what every front end lets a request set about its generation, whatever
// its wire format (the native protocol's params, each HTTP API's fields), and the one place
// the server's defaults and caps are applied to them: max_tokens no more than max_new_tokens,
// draft_max no more than the server's, sampling the configured defaults with the request's
// overrides, input sanitizing as configured.
#ifndef LLMD_SCHED_JOB_SETTINGS_H_
#define LLMD_SCHED_JOB_SETTINGS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"
#include "sched/job.h"

namespace llmd::sched {

struct GenerationSettings {
  std::optional<uint32_t> max_tokens;  // none: max_new_tokens
  std::optional<float> temperature, top_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int32_t> top_k;
  std::optional<uint32_t> seed;
  // At most this many tokens drafted per step (0: no speculative decoding for this request);
  // none: the server's draft_max.
  std::optional<uint32_t> draft_max;
  // The class the request asks for (none: its peer's configured default), and who sent it:
  // the config's request_classes give the peer its default and its ceiling.
  std::optional<RequestClass> request_class;
  PeerIdentity peer;
  std::optional<uint32_t> first_token_deadline_ms;  // Job::first_token_deadline_ms
  // The request's own context (Ollama's options.num_ctx); none: its model's manifest's
  // num_ctx, else the model's whole context.
  std::optional<int32_t> context_tokens;
  // The model the request names (none: the default): its manifest's defaults
  // (config::DaemonConfig::model_defaults) come between the request's and the server's.
  std::optional<std::string> model;
};

// Sets `job`'s options (max_tokens, context_tokens, sampling, draft_max), sanitize, its class (never above the
// peer's ceiling) and its peer from `settings` and `config`. The caller checks the result with job->options.sampling.Validate().
void ApplyGenerationSettings(const GenerationSettings& settings, const config::DaemonConfig& config, Job* job);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_JOB_SETTINGS_H_
