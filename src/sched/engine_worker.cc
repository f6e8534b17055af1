#include "sched/engine_worker.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"

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

EngineWorker::EngineWorker(std::unique_ptr<engine::Engine> engine, size_t queue_depth)
    : queue_depth_(queue_depth), engine_(std::move(engine)) {
  PublishHealth();
  last_progress_ms_ = RealClock::Get().NowMs();
  thread_ = std::thread([this] { Run(); });
}

EngineWorker::~EngineWorker() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

Status EngineWorker::Submit(Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return UnavailableError("the daemon is shutting down");
  if (queue_.size() >= queue_depth_) {
    return ResourceExhaustedError("the request queue is full (" + std::to_string(queue_depth_) +
                                  " waiting); retry later");
  }
  job.options.cancel = job.channel->cancel_flag();
  queue_.push_back(std::move(job));
  cv_.notify_one();
  return Status::Ok();
}

void EngineWorker::SwapEngine(std::unique_ptr<engine::Engine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::move(engine);
  cv_.notify_one();
}

void EngineWorker::Stop() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
    if (running_) running_->Cancel();
    cv_.notify_one();
  }
  for (auto& job : dropped) {
    job.channel->Push({JobEvent::Type::kError, {}, {}, UnavailableError("the daemon is shutting down")});
  }
}

HealthSnapshot EngineWorker::health() const {
  return {model_loaded_.load(), device_index_.load(), kv_usage_.load()};
}

size_t EngineWorker::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void EngineWorker::PublishHealth() {
  model_loaded_ = engine_ && engine_->loaded();
  device_index_ = engine_ ? engine_->model_info().device_index : 0;
  kv_usage_ = engine_ ? engine_->kv_cache_usage() : 0.0f;
}

void EngineWorker::Run() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Wake up now and then so the watchdog sees a live thread while idle.
      while (!stopping_ && queue_.empty() && !pending_) {
        cv_.wait_for(lock, std::chrono::seconds(1));
        last_progress_ms_ = RealClock::Get().NowMs();
      }
      if (pending_) {
        engine_ = std::move(pending_);  // the old engine is released here, between jobs
        PublishHealth();
        if (queue_.empty()) continue;
      }
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = job.channel;
    }
    RunJob(job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.reset();
    }
    last_progress_ms_ = RealClock::Get().NowMs();
    PublishHealth();
  }
}

void EngineWorker::RunJob(Job& job) {
  JobChannel& ch = *job.channel;
  engine::TextSink sink = [&](std::string_view text) {
    last_progress_ms_ = RealClock::Get().NowMs();
    kv_usage_ = engine_->kv_cache_usage();
    if (job.stream) ch.Push({JobEvent::Type::kText, std::string(text), {}, {}});
    return true;
  };
  // Each request stands alone, as in the reference daemon; the engine still reuses a shared
  // prompt prefix from its cache.
  auto result = engine_->Generate(job.system, job.user, job.options, sink);
  if (result.has_value()) {
    ch.Push({JobEvent::Type::kDone, {}, std::move(*result), {}});
  } else {
    ch.Push({JobEvent::Type::kError, {}, {}, result.error()});
  }
}

}  // namespace llmd::sched
