// JobQueue: the jobs waiting for a slot, by request class. The higher class is always taken
// first; within a class, peers take turns (round robin by UID), and each peer's own jobs keep
// their order, so one program that sends 16 requests does not starve another's.
//
// Each class has its own depth: background work that fills its queue never makes an
// interactive request wait for room or be refused.
//
// Thread-safety: none; the worker's queue lock guards it.
#ifndef LLMD_SCHED_JOB_QUEUE_H_
#define LLMD_SCHED_JOB_QUEUE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "common/request_class.h"
#include "sched/job.h"

namespace llmd::sched {

class JobQueue {
 public:
  explicit JobQueue(size_t depth_per_class) : depth_(depth_per_class) {}

  // ResourceExhausted (kQueueFull) when the job's class already has its depth waiting.
  Status Push(Job job);
  // The next job of class `lowest` or higher, if any waits.
  std::optional<Job> Pop(RequestClass lowest = RequestClass::kBackground);
  // The highest class with a job waiting.
  std::optional<RequestClass> FirstClass() const;
  // Everything waiting, in no particular order (shutdown).
  std::deque<Job> TakeAll();
  // The jobs whose first-token deadline has passed by `now_ms` (the clock of submitted_ms).
  std::vector<Job> TakeExpired(int64_t now_ms);

  bool empty() const { return size() == 0; }
  size_t size() const;
  size_t size(RequestClass c) const { return classes_[ClassIndex(c)].size; }
  // Jobs that a new job of class `c` would wait behind: those of its class and higher.
  size_t AheadOf(RequestClass c) const;
  // The first waiting job of every peer, in the order Pop would reach them: the highest class
  // first, and within a class the peers in their turn (pointers valid until the queue
  // changes). Admission takes the first it may: a peer whose turn it is but who may not take
  // a sequence now does not hold the peers after it back.
  std::vector<const Job*> Heads() const;
  // Takes `head`, one of Heads(), as Pop would take it in its turn: the next turn of its
  // class is the peer after its own.
  Job Take(const Job* head);
  // Every waiting job in the order Pop would hand them out now (pointers valid until the
  // queue changes): where each stands.
  std::vector<const Job*> InOrder() const;

 private:
  // A job without a known peer is one peer of its own.
  static constexpr uint32_t kUnknownPeer = UINT32_MAX;
  struct ClassQueue {
    std::map<uint32_t, std::deque<Job>> by_peer;  // never holds an empty deque
    std::optional<uint32_t> last_served;          // the peer whose job went last
    size_t size = 0;
  };
  std::optional<Job> PopFrom(ClassQueue& queue);
  // The peer whose turn it is in `queue` (not empty): the next after the one served last.
  static std::map<uint32_t, std::deque<Job>>::const_iterator NextPeer(const ClassQueue& queue);

  size_t depth_;
  std::array<ClassQueue, kRequestClasses> classes_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_JOB_QUEUE_H_
