#include "sched/job_queue.h"

#include <string>
#include <utility>

namespace llmd::sched {

Status JobQueue::Push(Job job) {
  ClassQueue& queue = classes_[ClassIndex(job.request_class)];
  if (queue.size >= depth_) {
    return ResourceExhaustedError("the request queue is full (" + std::to_string(depth_) + " " +
                                  RequestClassName(job.request_class) + " requests waiting); retry later")
        .WithReason(ErrorReason::kQueueFull);
  }
  const uint32_t peer = job.peer_uid.value_or(kUnknownPeer);
  queue.by_peer[peer].push_back(std::move(job));
  ++queue.size;
  return Status::Ok();
}

std::map<uint32_t, std::deque<Job>>::const_iterator JobQueue::NextPeer(const ClassQueue& queue) {
  // The next peer after the one served last, wrapping around.
  auto it = queue.last_served.has_value() ? queue.by_peer.upper_bound(*queue.last_served) : queue.by_peer.begin();
  return it == queue.by_peer.end() ? queue.by_peer.begin() : it;
}

std::optional<Job> JobQueue::PopFrom(ClassQueue& queue) {
  if (queue.by_peer.empty()) return std::nullopt;
  return Take(&NextPeer(queue)->second.front());
}

std::optional<Job> JobQueue::Pop(RequestClass lowest) {
  for (int c = 0; c <= ClassIndex(lowest); ++c) {
    if (auto job = PopFrom(classes_[c])) return job;
  }
  return std::nullopt;
}

std::optional<RequestClass> JobQueue::FirstClass() const {
  for (int c = 0; c < kRequestClasses; ++c) {
    if (classes_[c].size > 0) return static_cast<RequestClass>(c);
  }
  return std::nullopt;
}

std::deque<Job> JobQueue::TakeAll() {
  std::deque<Job> all;
  for (ClassQueue& queue : classes_) {
    for (auto& [peer, jobs] : queue.by_peer) {
      for (Job& job : jobs) all.push_back(std::move(job));
    }
    queue = ClassQueue();
  }
  return all;
}

std::vector<Job> JobQueue::TakeExpired(int64_t now_ms) {
  std::vector<Job> expired;
  for (ClassQueue& queue : classes_) {
    for (auto it = queue.by_peer.begin(); it != queue.by_peer.end();) {
      std::erase_if(it->second, [&](Job& job) {
        if (!job.first_token_deadline_ms || now_ms - job.submitted_ms <= *job.first_token_deadline_ms) return false;
        expired.push_back(std::move(job));
        --queue.size;
        return true;
      });
      it = it->second.empty() ? queue.by_peer.erase(it) : std::next(it);
    }
  }
  return expired;
}

size_t JobQueue::size() const {
  size_t n = 0;
  for (const ClassQueue& queue : classes_) n += queue.size;
  return n;
}

std::vector<const Job*> JobQueue::Heads() const {
  std::vector<const Job*> heads;
  for (const ClassQueue& queue : classes_) {
    if (queue.by_peer.empty()) continue;
    auto it = NextPeer(queue);
    for (size_t n = 0; n < queue.by_peer.size(); ++n, ++it) {
      if (it == queue.by_peer.end()) it = queue.by_peer.begin();
      heads.push_back(&it->second.front());
    }
  }
  return heads;
}

Job JobQueue::Take(const Job* head) {
  ClassQueue& queue = classes_[ClassIndex(head->request_class)];
  auto it = queue.by_peer.find(head->peer_uid.value_or(kUnknownPeer));
  Job job = std::move(it->second.front());
  it->second.pop_front();
  queue.last_served = it->first;
  if (it->second.empty()) queue.by_peer.erase(it);
  --queue.size;
  return job;
}

std::vector<const Job*> JobQueue::InOrder() const {
  std::vector<const Job*> order;
  for (const ClassQueue& queue : classes_) {
    // PopFrom's round robin, played out on positions instead of jobs.
    std::map<uint32_t, size_t> taken;
    std::optional<uint32_t> last = queue.last_served;
    for (size_t n = 0; n < queue.size; ++n) {
      auto it = last.has_value() ? queue.by_peer.upper_bound(*last) : queue.by_peer.begin();
      for (size_t looked = 0; looked <= queue.by_peer.size(); ++looked) {
        if (it == queue.by_peer.end()) it = queue.by_peer.begin();
        if (taken[it->first] < it->second.size()) break;
        ++it;
      }
      order.push_back(&it->second[taken[it->first]++]);
      last = it->first;
    }
  }
  return order;
}

size_t JobQueue::AheadOf(RequestClass c) const {
  size_t n = 0;
  for (int i = 0; i <= ClassIndex(c); ++i) n += classes_[i].size;
  return n;
}

}  // namespace llmd::sched
