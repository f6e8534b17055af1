// HandlerThreads: the owner of a server's connection-handler threads, at most `cap` at once.
// Every thread is joinable and joined: finished ones by Reap() (the accept loop calls it),
// the rest by JoinAll() at shutdown, after the owner has told its handlers to stop (each
// handler polls its server's stopping flag). No handler thread is ever detached, so none can
// outlive what it uses.
//
// Thread-safety: every method is thread-safe. Lifetime: the destructor joins every thread.
#ifndef LLMD_COMMON_HANDLER_THREADS_H_
#define LLMD_COMMON_HANDLER_THREADS_H_

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace llmd {

class HandlerThreads {
 public:
  explicit HandlerThreads(size_t cap);
  ~HandlerThreads();  // JoinAll()
  HandlerThreads(const HandlerThreads&) = delete;
  HandlerThreads& operator=(const HandlerThreads&) = delete;

  // Runs `handler` on a new thread if fewer than the cap are running; false (and nothing
  // runs) otherwise.
  bool TryStart(std::function<void()> handler);
  size_t active() const;
  // Joins the threads whose handlers have returned.
  void Reap();
  // Waits for every handler to return and joins its thread.
  void JoinAll();
  // Readable whenever a handler has returned (the accept loop polls it to admit a waiting
  // connection at once); Reap() clears it.
  int done_fd() const { return done_fd_; }

 private:
  struct Entry {
    std::thread thread;
    bool finished = false;
  };
  const size_t cap_;
  const int done_fd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::list<Entry> entries_;  // guarded by mu_
  size_t running_ = 0;        // guarded by mu_
};

}  // namespace llmd

#endif  // LLMD_COMMON_HANDLER_THREADS_H_
