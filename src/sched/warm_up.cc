#include "sched/warm_up.h"

#include "sched/engine_worker.h"
#include "sched/job_waiter.h"

namespace llmd::sched {

Result<std::unique_ptr<engine::Engine>> WarmUp(std::unique_ptr<engine::Engine> engine, const std::string& system_prompt) {
  WorkerOptions options;
  options.queue_depth = 1;
  const bool embeddings = engine->model_info().embeddings;
  EngineWorker worker(std::move(engine), options);
  Job job;
  // The first decode allocates the compute graph: an embedding model embeds a word instead.
  if (embeddings) job.prompt = EmbeddingInputs{{"Hello"}};
  else job.prompt = OneShotChat{system_prompt, "Hello"};
  job.options.max_tokens = 1;
  job.options.sampling = engine::SamplingParams::Greedy();
  auto channel = job.channel;
  Status status = worker.Submit(std::move(job));
  // No deadline and no peer: loading waits for the first decode however long it takes.
  if (status.ok()) status = JobWaiter().Wait(*channel, WaitOptions{}).error;
  auto warmed = worker.Release();
  if (!status.ok()) return status.WithContext("warm-up failed");
  return warmed;
}

}  // namespace llmd::sched
