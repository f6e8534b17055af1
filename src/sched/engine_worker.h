// EngineWorker: the one thread that owns a model's Engine and schedules it. Other threads
// submit jobs through a bounded queue and read each job's events from its own channel, so
// nothing ever blocks on the engine except the engine thread itself.
//
// Continuous batching: up to Engine::sequences() jobs run at once, one slot (KV sequence)
// each. Every step is one decode call holding the next token of every generating slot plus
// prompt chunks of slots still prefilling (bounded by the engine's batch size), so a long
// prompt never stalls running streams and new jobs join between steps. A new job takes the
// free slot whose cached tokens share the longest prefix with its prompt (the same system
// prompt, say) and prefills only the rest; otherwise the least recently used slot.
//
// Thread-safety: every public method is thread-safe. Lifetime: channels may outlive the
// worker (shared ownership between the worker and the requester).
#ifndef LLMD_SCHED_ENGINE_WORKER_H_
#define LLMD_SCHED_ENGINE_WORKER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chat/prompt_pieces.h"
#include "engine/engine.h"
#include "sched/memory_guard.h"
#include "sched/metrics.h"

namespace llmd::sched {

// What a job produces, in order: zero or more kText events, then one kDone or kError.
struct JobEvent {
  enum class Type { kText, kDone, kError };
  Type type;
  std::string text;               // kText
  engine::Completion completion;  // kDone
  Status error;                   // kError
};

// A job's mailbox: the engine thread pushes, the requester waits. Its eventfd becomes
// readable whenever events are pending, so a connection thread can poll it together with its
// socket. Cancel() asks the engine to stop at its next step.
class JobChannel {
 public:
  JobChannel();
  ~JobChannel();
  JobChannel(const JobChannel&) = delete;
  JobChannel& operator=(const JobChannel&) = delete;

  void Push(JobEvent event);
  // Takes the next event, if any (non-blocking).
  std::optional<JobEvent> TryPop();
  int event_fd() const { return event_fd_; }

  void Cancel() { cancel_.store(true); }
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }

 private:
  std::mutex mu_;
  std::deque<JobEvent> events_;
  int event_fd_;
  std::atomic<bool> cancel_{false};
};

// What to generate from. By default a one-shot chat turn {system, user}; with `messages` a
// whole conversation (OpenAI chat); with `raw` the user text is a plain completion prompt.
struct Job {
  std::string system;
  std::string user;
  std::vector<chat::Message> messages;  // non-empty: render these (system and user unused)
  bool enable_thinking = false;         // with messages: the template's thinking switch
  bool raw = false;                     // user is a raw prompt, no template
  std::vector<std::string> stop;        // stop strings: the text ends before the first one
  bool sanitize = true;             // apply the seed's input sanitizer to `user`
  std::string session;              // non-empty: a chat turn on this session (created if new)
  int64_t submitted_ms = 0;         // set by Submit (RealClock)
  engine::GenerateOptions options;  // options.cancel is set to the channel's flag
  bool stream = false;              // send kText events as text is generated
  std::shared_ptr<JobChannel> channel;
};

// Counters since start, for the Stats request.
struct WorkerStats {
  uint32_t requests = 0;
  uint64_t generated_tokens = 0;
  double ttft_p50_ms = 0, ttft_p95_ms = 0;
  double prefill_tokens_per_second = 0, decode_tokens_per_second = 0;
  double cached_token_ratio = 0;
  uint32_t active = 0, queued = 0, sessions = 0;
};

// Health as the last finished step left it; readable without touching the engine.
struct HealthSnapshot {
  bool model_loaded = false;
  uint8_t device_index = 0;
  float kv_cache_usage = 0;
  uint64_t model_fingerprint = 0;
  int32_t vocab_size = 0;
};

class EngineWorker {
 public:
  // Takes a loaded engine and starts the thread.
  EngineWorker(std::unique_ptr<engine::Engine> engine, size_t queue_depth, int32_t batch_tokens);
  ~EngineWorker();  // stops the thread; queued jobs get an Unavailable error
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // Queues a job. ResourceExhausted when the queue is full, Unavailable once stopping.
  // `batch_tokens` bounds the tokens of one decode step.
  Status Submit(Job job);

  // How often an idle engine thread shows it is alive (default 1 s); a watchdog whose
  // interval is shorter needs it more often.
  void set_idle_heartbeat(std::chrono::milliseconds period) { idle_wake_ms_ = period.count(); }
  // Consulted before queueing each job; may be null (the default).
  void set_memory_guard(MemoryGuard* guard) { memory_guard_ = guard; }
  // Chat sessions kept at most (least recently used ones are dropped first).
  void set_max_sessions(size_t n) { max_sessions_ = n; }
  // Ends a chat session; NotFound if there is none by that name.
  Status EndSession(const std::string& session);
  // A session's system prompt and exact tokens (NotFound if none), and the reverse.
  Result<std::pair<std::string, std::vector<engine::TokenId>>> GetSession(const std::string& session) const;
  void PutSession(const std::string& session, std::string system, std::vector<engine::TokenId> tokens);
  WorkerStats stats() const;

  // Replaces the engine between jobs; the old one serves until then and is then released.
  void SwapEngine(std::unique_ptr<engine::Engine> engine);

  // Cancels the running job and every queued one (each gets a final kError Unavailable).
  void Stop();

  HealthSnapshot health() const;
  // Where the current engine's model lives, per device (planned and allocated).
  std::vector<engine::DevicePlacement> placement() const;
  // Latency histograms and token counters for /metrics.
  const WorkerMetrics& metrics() const { return metrics_; }
  // Milliseconds (RealClock) of the engine thread's last sign of life: a finished decode step
  // or a wait on the queue. The watchdog pings systemd only while this moves.
  int64_t last_progress_ms() const { return last_progress_ms_.load(); }

 private:
  struct Slot;
  void Run();
  void Admit(Job job);
  bool Step();  // one decode step over the busy slots; false when there was nothing to do
  void Sample(Slot& slot, int32_t output_index);
  void Finish(Slot& slot, engine::FinishReason reason);
  void Fail(Slot& slot, const Status& status);
  bool AnyBusy() const;
  void PublishHealth();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;                    // guarded by mu_
  std::unique_ptr<engine::Engine> pending_;  // guarded by mu_: the engine to swap in
  std::vector<std::shared_ptr<JobChannel>> running_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  const size_t queue_depth_;

  struct Session {
    std::string system;
    std::vector<engine::TokenId> tokens;  // every token fed and generated so far
    int64_t last_used = 0;
  };
  void RecordFinished(const engine::GenerationStats& st);

  std::map<std::string, Session> sessions_;  // guarded by mu_
  size_t max_sessions_ = 64;
  // Stats, guarded by mu_.
  uint32_t finished_ = 0;
  uint64_t generated_ = 0, prompt_tokens_ = 0, cached_tokens_ = 0, prefilled_ = 0;
  double prefill_ms_ = 0, decode_ms_ = 0;
  uint64_t decoded_ = 0;
  std::deque<double> ttfts_;  // the last 1000
  WorkerMetrics metrics_;

  std::unique_ptr<engine::Engine> engine_;  // engine thread only
  std::vector<std::unique_ptr<Slot>> slots_;  // engine thread only
  const int32_t batch_tokens_;
  int64_t use_counter_ = 0;                 // engine thread only: LRU clock
  size_t busy_peak_ = 0, last_peak_ = 0;    // engine thread only: most slots busy at once, now and
                                            // in the last busy period (admission window)
  std::vector<engine::DevicePlacement> placement_;  // guarded by mu_
  MemoryGuard* memory_guard_ = nullptr;            // set before serving
  std::atomic<bool> model_loaded_{false};
  std::atomic<float> kv_usage_{0};
  std::atomic<uint8_t> device_index_{0};
  std::atomic<uint64_t> fingerprint_{0};
  std::atomic<int32_t> vocab_size_{0};
  std::atomic<int64_t> last_progress_ms_{0};
  std::atomic<int64_t> idle_wake_ms_{1000};
  std::thread thread_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_ENGINE_WORKER_H_
