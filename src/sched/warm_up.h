// WarmUp: one short generation on a freshly loaded engine, through the scheduler like every
// other request, so the first decode (which allocates the compute graph) happens before the
// daemon says ready rather than on the first client's time.
#ifndef LLMD_SCHED_WARM_UP_H_
#define LLMD_SCHED_WARM_UP_H_

#include <memory>
#include <string>

#include "engine/engine.h"

namespace llmd::sched {

// Generates one token for {system_prompt, "Hello"} and hands the engine back (its memory is
// cleared by the next worker that takes it). The error says why the model cannot serve.
Result<std::unique_ptr<engine::Engine>> WarmUp(std::unique_ptr<engine::Engine> engine, const std::string& system_prompt);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_WARM_UP_H_
