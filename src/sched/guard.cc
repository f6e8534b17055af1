#include "sched/guard.h"

namespace llmd::sched {

Job GuardJob(const config::DaemonConfig& c, const std::string& prompt, const std::string& answer) {
  Job job;
  job.prompt = OneShotChat{c.guard_system, "User: " + prompt + "\n\nAssistant: " + answer};
  job.options.max_tokens = 64;  // a verdict and a categories line
  job.options.sampling = engine::SamplingParams::Greedy();
  job.options.sampling.grammar = c.guard_grammar;
  return job;
}

std::string GuardRefusal(const std::string& verdict) {
  if (verdict.find("Safety: Unsafe") == std::string::npos) return std::string();
  std::string refusal = "refused by the guard: the answer was judged unsafe";
  if (size_t at = verdict.find("Categories: "); at != std::string::npos) {
    std::string categories = verdict.substr(at + 12);
    categories = categories.substr(0, categories.find('\n'));
    refusal += " (categories: " + categories + ")";
  }
  return refusal;
}

}  // namespace llmd::sched
