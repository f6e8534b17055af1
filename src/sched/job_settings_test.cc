#include "sched/job_settings.h"

#include <gtest/gtest.h>

namespace llmd::sched {
namespace {

TEST(GenerationSettings, TheServersDefaultsAndCapsApplyOnce) {
  config::DaemonConfig c;
  c.max_new_tokens = 100;
  c.engine.speculative.draft_max = 8;
  c.sampling.temperature = 0.5f;
  c.sampling.top_k = 7;
  c.content_safety_check = true;

  Job defaults;
  ApplyGenerationSettings({}, c, &defaults);
  EXPECT_EQ(defaults.options.max_tokens, 100);
  EXPECT_EQ(defaults.options.sampling.temperature, 0.5f);
  EXPECT_EQ(defaults.options.sampling.top_k, 7);
  EXPECT_EQ(defaults.options.draft_max, -1) << "none: the server's";
  EXPECT_TRUE(defaults.sanitize);

  GenerationSettings s;
  s.max_tokens = 1000;
  s.draft_max = 50;
  s.temperature = 0.0f;
  s.seed = 42;
  Job job;
  ApplyGenerationSettings(s, c, &job);
  EXPECT_EQ(job.options.max_tokens, 100) << "capped by max_new_tokens";
  EXPECT_EQ(job.options.draft_max, 8) << "capped by the server's draft_max";
  EXPECT_EQ(job.options.sampling.temperature, 0.0f);
  EXPECT_EQ(job.options.sampling.top_k, 7) << "not overridden: the configured default";
  EXPECT_EQ(job.options.sampling.seed, 42u);

  s.max_tokens = 3;
  s.draft_max = 0;
  ApplyGenerationSettings(s, c, &job);
  EXPECT_EQ(job.options.max_tokens, 3);
  EXPECT_EQ(job.options.draft_max, 0) << "0: no speculative decoding for this request";
}

// A manifest's num_ctx is the context of a request that sets none; a request's own wins.
TEST(GenerationSettings, TheModelsNumCtxIsTheDefaultContextAndTheRequestsWins) {
  config::DaemonConfig c;
  config::ModelGenerationDefaults terse;
  terse.context_tokens = 512;
  c.model_defaults["terse"] = terse;

  Job other;
  ApplyGenerationSettings({}, c, &other);
  EXPECT_EQ(other.options.context_tokens, 0) << "no manifest: the model's whole context";

  GenerationSettings s;
  s.model = "terse:latest";
  Job by_manifest;
  ApplyGenerationSettings(s, c, &by_manifest);
  EXPECT_EQ(by_manifest.options.context_tokens, 512);

  s.context_tokens = 2048;
  Job by_request;
  ApplyGenerationSettings(s, c, &by_request);
  EXPECT_EQ(by_request.options.context_tokens, 2048) << "the request's num_ctx wins, larger or not";
}

}  // namespace
}  // namespace llmd::sched
