// The guard cascade's pieces shared by the native and HTTP front ends: the classifier job for
// one exchange, and the reading of its verdict. Each front end submits and awaits the job its
// own way.
#ifndef LLMD_SCHED_GUARD_H_
#define LLMD_SCHED_GUARD_H_

#include <string>

#include "config/config.h"
#include "sched/job.h"

namespace llmd::sched {

// A job for the guard model judging `answer` to `prompt`: its own instruction, greedy, held to
// guard_grammar, with a fresh channel.
Job GuardJob(const config::DaemonConfig& config, const std::string& prompt, const std::string& answer);

// "" when the verdict lets the answer through ("Safety: Safe" or "Controversial"), else the
// refusal message, naming the categories when the guard gave them.
std::string GuardRefusal(const std::string& verdict);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_GUARD_H_
