#include "sched/job.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace llmd::sched {

JobChannel::JobChannel() : event_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

JobChannel::~JobChannel() {
  if (event_fd_ >= 0) ::close(event_fd_);
}

void JobChannel::Push(JobEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }
  uint64_t one = 1;
  (void)!::write(event_fd_, &one, sizeof one);
}

std::optional<JobEvent> JobChannel::TryPop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.empty()) {
    uint64_t drain;
    (void)!::read(event_fd_, &drain, sizeof drain);  // nothing pending: clear readiness
    return std::nullopt;
  }
  JobEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void JobChannel::Wait(int timeout_ms) const {
  pollfd p{event_fd_, POLLIN, 0};
  ::poll(&p, 1, timeout_ms);
}

}  // namespace llmd::sched
