#include "sched/request_runner.h"

#include <utility>

#include "sched/request_dispatch.h"

namespace llmd::sched {

RunOutcome RequestRunner::Run(RunRequest request) {
  return RequestDispatcher(state_, waiter_).Dispatch(std::move(request));
}

}  // namespace llmd::sched
