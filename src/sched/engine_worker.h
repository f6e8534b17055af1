// EngineWorker: the one thread that owns a model's Engine and schedules it, and the only code
// that turns prompts into generated text. Other threads submit jobs through a bounded queue
// and read each job's events from its own channel, so nothing ever blocks on the engine
// except the engine thread itself.
//
// Continuous batching: up to Engine::sequences() jobs hold a slot (KV sequence) each, and up
// to decode_width of them run in a step. Every step holds the next token of every running
// slot plus prompt chunks of slots still prefilling (bounded by batch_tokens), so a long
// prompt never stalls running streams and new jobs join between steps.
//
// Request classes: the queue (JobQueue) hands out the higher class first, peers taking turns
// within a class; the step policy (StepPolicy) ranks the busy slots by class and pauses what
// does not fit the decode width. The sequences beyond the width are for a higher class: an
// interactive job arriving while background work fills the width takes one, and a background
// slot sits out, its memory kept in place, until there is room again. A job that arrives
// while a step runs and stands above a call of it (a higher class, or its peer's first job
// against other peers' later ones: Standing) stops that call (skipped, or stopped while it
// computes where the engine can drop it: Engine::DecodeBatchUnlessStopped), so it waits for
// no work below it; the stopped tokens are computed again next step, whole.
//
// Prefix reuse: a new job takes the free slot that lets it skip the most prompt tokens: its
// own cached tokens, or another slot's copied over (the same system prompt held by a busy
// slot, say), trimmed to the common prefix. Memory that cannot be trimmed (a recurrent
// state) is restored from a checkpoint saved at one of the prompt's prefill cuts, where its
// own cold prefill would pass through the same state (PrefillCuts, CheckpointStore). Requests that arrive together with a shared prefix that
// no slot holds yet prefill it once: the later ones wait for the first to pass it, then copy.
//
// Speculative decoding: where the engine drafts, each generating slot's draft rides in the
// same step behind its pending token and is verified by sampling; what the target rejects is
// taken back (docs/architecture.md).
//
// A decode step that fails is retried one sequence at a time, so a request that breaks the
// engine fails alone and the others of its step keep going.
//
// Thread-safety: every public method is thread-safe. Lifetime: channels may outlive the
// worker (shared between the worker and the requester).
#ifndef LLMD_SCHED_ENGINE_WORKER_H_
#define LLMD_SCHED_ENGINE_WORKER_H_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "engine/engine.h"
#include "sched/checkpoint_store.h"
#include "sched/draft_governor.h"
#include "sched/job.h"
#include "sched/job_queue.h"
#include "sched/memory_guard.h"
#include "sched/metrics.h"
#include "sched/session_store.h"
#include "sched/step_policy.h"
#include "sched/wait_estimate.h"

namespace llmd::sched {

// Fixed when the worker is built; nothing changes after its thread starts.
struct WorkerOptions {
  size_t queue_depth = 16;       // jobs of one class waiting beyond the slots; more are ResourceExhausted
  // Slots that run in one step; the engine's other sequences are kept for higher classes.
  // 0: every sequence runs.
  size_t decode_width = 0;
  // While an interactive slot runs or is expected, lower classes' prompt tokens per step
  // (StepPolicy). Interactive work is expected when the config grants it to some peer, or
  // while the last interactive job was admitted less than kInteractiveLingerMs ago.
  int64_t shared_prefill_tokens = 64;
  // A prompt chunk that must run whole (its call was stopped last time) has at most this many
  // tokens, so it holds off the next arrival for about a decode call's time. On a CPU a chunk
  // this short computes a token as fast as a long one: llama-bench pp16 161 t/s, pp64 158 t/s
  // (0.6B Q4_0, 2 threads), 100 ms against a 4-sequence decode call's 75 ms; the 64-token
  // chunks it replaced ran 400 ms, and an arrival during one waited for all of it.
  int64_t whole_chunk_tokens = 16;
  bool interactive_peers = false;
  // What the device lets background work do now (battery, heat); null: always run. Asked
  // once per step on the engine thread.
  std::function<BackgroundAction()> background_mode;
  int32_t batch_tokens = 512;    // tokens of one decode step
  size_t max_sessions = 64;      // chat sessions kept (least recently used dropped first)
  MemoryGuard* memory_guard = nullptr;  // consulted before queueing each job; may be null
  // How often an idle engine thread shows it is alive; a watchdog with a shorter interval
  // needs it more often.
  std::chrono::milliseconds idle_heartbeat{1000};
  // Waking from idle after serving several requests at once, wait up to this long for the
  // rest of a burst (bounded by the clock) so its requests share their first prefill step.
  int64_t admission_window_ms = 10;
  uint64_t checkpoint_budget_bytes = 256ull << 20;  // recurrent-state checkpoints, all slots
  // Host memory for paused sequences parked when the engine has no room for a step; past it
  // a paused sequence's memory is dropped and recomputed from its tokens when it resumes.
  uint64_t parked_budget_bytes = 512ull << 20;
  // System prompts prefilled when the worker takes an engine and kept in host memory for its
  // life: a chat that starts with one starts from it, even after an idle release.
  std::vector<std::string> pinned_system_prompts;
  // Shortest gain worth copying another slot's memory for, or waiting for it (tokens): a copy
  // moves a whole sequence (all its cells, e.g. 224 MiB of F16 KV for a 0.6B model at 2048
  // tokens), which costs about what prefilling a few dozen tokens does on a CPU.
  size_t min_shared_prefix = 64;
  // How long the engine stays idle before it frees its working memory (KV cache, recurrent
  // states, scratch; the weights stay) and drops every cached prefix; < 0: never. A job's
  // keep_alive_ms replaces it for the idle time after that job.
  int64_t idle_release_after_ms = -1;
  const Clock* clock = &RealClock::Get();  // must outlive the worker
};

// Counters since start, for the Stats request and /metrics.
struct WorkerStats {
  uint32_t requests = 0;
  uint64_t generated_tokens = 0, prompt_tokens = 0, cached_tokens = 0;
  double ttft_p50_ms = 0, ttft_p95_ms = 0;
  double prefill_tokens_per_second = 0, decode_tokens_per_second = 0;
  double cached_token_ratio = 0;
  uint32_t active = 0, queued = 0, sessions = 0;
  uint64_t steps = 0;              // decode steps run
  uint64_t prefix_copies = 0;      // prefixes copied from another slot
  uint64_t sequence_moves = 0;     // slots moved to another sequence (StepChoice::moves)
  uint64_t checkpoints = 0, checkpoint_bytes = 0, checkpoint_hits = 0, checkpoint_misses = 0;
  uint64_t draft_tokens = 0, accepted_draft_tokens = 0;  // speculative decoding, all requests
  engine::MemoryUse memory;            // the model's memory as the last step left it
  uint64_t working_memory_releases = 0;  // idle releases since start
  uint32_t paused = 0;             // slots that sat out the last step for a higher class
  uint64_t preemptions = 0;        // times a running slot was paused for a higher class
  uint32_t parked = 0;             // paused slots whose memory is parked in host memory now
  uint64_t parked_bytes = 0;
  uint64_t parks = 0, recomputes = 0;  // paused slots parked / dropped and recomputed, since start
  uint32_t pinned_prefixes = 0;    // system prompts pinned (WorkerOptions::pinned_system_prompts)
  uint64_t pinned_bytes = 0, pinned_hits = 0;  // their host memory; prompts that started from one
  uint32_t queued_by_class[kRequestClasses] = {};
};

// Health as the last finished step left it; readable without touching the engine.
struct HealthSnapshot {
  bool model_loaded = false;
  uint8_t device_index = 0;
  float kv_cache_usage = 0;
  uint64_t model_fingerprint = 0;
  int32_t vocab_size = 0;
  int32_t context_tokens = 0;  // what one request may hold (ModelInfo::context_tokens)
};

// How long after an interactive job lower classes keep sharing each step's prefill: a voice
// pipeline speaks every few seconds to minutes, and its next request should not wait behind
// a whole batch of background prefill.
inline constexpr int64_t kInteractiveLingerMs = 5 * 60 * 1000;

class EngineWorker {
 public:
  // Takes a loaded engine and starts the thread.
  EngineWorker(std::unique_ptr<engine::Engine> engine, WorkerOptions options);
  ~EngineWorker();  // stops the thread; queued jobs get an Unavailable error
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // Queues a job. ResourceExhausted (kQueueFull) when the queue is full, Unavailable
  // (kShuttingDown) once stopping; the job's channel then gets nothing.
  Status Submit(Job job);

  // Ends a chat session; NotFound if there is none by that name.
  Status EndSession(const std::string& session);
  // A session's system prompt and exact tokens (NotFound if none), and the reverse.
  Result<std::pair<std::string, std::vector<engine::TokenId>>> GetSession(const std::string& session) const;
  void PutSession(const std::string& session, std::string system, std::vector<engine::TokenId> tokens);
  // The same with the turn starts (what a session file keeps, so drop_oldest can cut whole turns).
  Result<StoredSession> SessionCopy(const std::string& session) const;
  void PutSession(const std::string& session, StoredSession stored);
  WorkerStats stats() const;

  // What a new job of class `c` with about `prompt_tokens` to prefill would wait for its first
  // token now (wait_estimate.h).
  WaitEstimate EstimateFirstToken(RequestClass c, size_t prompt_tokens) const;

  // The jobs waiting for a slot, in the order they will get one, each with where it stands
  // and its expected wait (queue position, as Ollama users ask: ollama #5253).
  struct QueuedJob {
    std::optional<uint32_t> peer_uid;
    RequestClass request_class = RequestClass::kNormal;
    size_t position = 0;    // 1: the next to get a slot
    int64_t waited_ms = 0;  // since it was submitted
    WaitEstimate estimate;  // from now
  };
  std::vector<QueuedJob> Queued() const;

  // Keeps the working memory this long from now when idle, then frees it (< 0: until a job
  // says otherwise); Ollama's keep_alive on a request that generates nothing.
  void KeepAlive(int64_t ms);

  // Replaces the engine between jobs; the old one serves until then and is then released.
  void SwapEngine(std::unique_ptr<engine::Engine> engine);

  // Cancels the running jobs and every queued one (each gets a final event), then returns;
  // the thread ends once the running jobs have ended.
  void Stop();
  // Stops, joins the thread and hands the engine back (warm-up runs a worker this way).
  std::unique_ptr<engine::Engine> Release();

  // The current model's tokenizer, on the caller's thread: the vocabulary is read-only while
  // the model decodes, and engine_mu_ keeps the engine from being swapped meanwhile.
  Result<std::vector<engine::TokenId>> Tokenize(std::string_view text, bool add_special, bool parse_special) const;
  Result<std::string> Detokenize(const std::vector<engine::TokenId>& tokens, bool render_special) const;

  HealthSnapshot health() const;
  // Where the current engine's model lives, per device (planned and allocated).
  std::vector<engine::DevicePlacement> placement() const;
  // Latency histograms and token counters for /metrics.
  const WorkerMetrics& metrics() const { return metrics_; }
  // Milliseconds (the worker's clock) of the engine thread's last sign of life: a finished
  // decode step or a wait on the queue. The watchdog pings systemd only while this moves.
  int64_t last_progress_ms() const { return last_progress_ms_.load(); }

 private:
  struct Slot;
  struct ReusePlan;
  // How long a round in which every busy slot sits out rests before the next (StepPolicy):
  // a throttled background job runs one round in StepPolicyOptions::throttle_period.
  static constexpr std::chrono::milliseconds kSittingOutRest{50};
  void Run();
  std::vector<Job> TakeAdmissions();
  // Swaps in a pending engine once every slot is idle; mu_ held (released meanwhile).
  void SwapWhenIdle(std::unique_lock<std::mutex>& lock);
  // The jobs that may take a free slot now (StepPolicy's MayAdmit); mu_ held.
  std::vector<Job> PopAdmissible();
  void ResetSlots();
  size_t DecodeWidth() const;  // engine thread
  WaitEstimate EstimateLocked(RequestClass c, size_t prompt_tokens) const;  // mu_ held
  MeasuredCosts Costs() const;  // takes stats_mu_
  // Ends a job that never took a slot with `end`, and forgets its channel; mu_ not held.
  void Unadmit(const Job& job, JobEvent end);
  // Fails the queued jobs whose deadline passed; mu_ held.
  void ExpireQueued();
  // At admission, with the prompt and its reuse known: whether the job can still meet its
  // deadline; else the refusal.
  Status CheckDeadline(const Job& job, size_t uncached_tokens) const;
  void Admit(Job job);
  void Place(Job job, engine::ChatPlan chat_plan, std::unique_ptr<engine::Sampler> sampler);
  void RunEmbeddings(Job& job);
  Result<engine::ChatPlan> BuildPrompt(Job& job);
  // engine_worker_overflow.cc: with ContextOverflow::kDropOldest, a chat prompt longer than
  // the context loses its oldest whole turns (sched/prompt_overflow.h); the job records what
  // went. Any other prompt comes back as it is.
  Result<engine::ChatPlan> FitToContext(Job& job, Result<engine::ChatPlan> plan);
  // A session turn's `tokens`, appended at `at`: where its user message starts, if that can be told.
  void NoteTurnStart(SessionTurn& turn, size_t at, const std::vector<engine::TokenId>& tokens) const;
  // Where the shape of a decode changes its arithmetic (MemoryCapabilities::
  // decode_shape_tokens): prompts are prefilled cut at PrefillCuts and steps are decoded in
  // ShapeStableCalls, so the cache never changes an answer.
  bool ShapeMatters() const { return engine_->model_info().memory.decode_shape_tokens > 0; }
  std::vector<size_t> PromptCuts(const std::vector<engine::TokenId>& prompt) const;  // empty unless ShapeMatters
  // Of `keep` tokens a memory holds, computed as a prompt of `computed_for` tokens, those a
  // prompt of `prompt_tokens` may reuse: none generated, and only rows computed with the
  // kernels its cold prefill would use (MemoryCapabilities::prompt_call_tokens).
  size_t AlikePrefix(size_t computed_for, size_t prompt_tokens, size_t keep) const;
  // `cuts`: the prompt's (ShapeMatters), else null. `request_class`: the job's; of free slots
  // that reuse as much, one whose cache a higher class left is taken last. `only_target`: plan
  // for that slot alone (a job already on it), else for any free slot. `leaving`: the busy slot
  // whose place the job takes when it ends (PlaceTakenOver), left out of the sequences it will
  // decode beside.
  ReusePlan PlanReuse(const std::vector<engine::TokenId>& prompt, const std::vector<size_t>* cuts,
                      RequestClass request_class, Slot* only_target = nullptr, const Slot* leaving = nullptr);
  // Where a new job of this class finds the decode width full and outranks no busy job, it
  // decodes once one ends: likely the one with the fewest tokens left to its budget, returned.
  // Null where it decodes at once.
  const Slot* PlaceTakenOver(RequestClass request_class) const;
  // Of two free slots equal in every other way, whether `a` is taken before `b`.
  bool FreeSlotGoesFirst(const Slot& a, const Slot& b) const;
  // Whether a slot's memory as it stands is the state a cold prefill cut at `cuts` passes
  // through (always where the shape does not matter).
  static bool LiveStateServes(const Slot& source, const std::vector<size_t>* cuts);
  // Whether `source`'s memory holds all of `prompt` as the prompt of its last job, with the
  // logits of its last token kept (Slot::prompt_end): an exact repeat then decodes nothing
  // before its first token.
  static bool HoldsPromptEnd(const Slot& source, const std::vector<engine::TokenId>& prompt);
  // Such a repeat, placed: its first token, sampled from those logits.
  void SampleKeptPromptEnd(Slot& slot);
  size_t ApplyReuse(const ReusePlan& plan);
  void ResolveSharedPrefixWaits();
  void PlanCheckpoints(Slot& slot);
  void WaitForSharedPrefix(Slot& slot);
  bool Step();  // one decode step over the busy slots; false when there was nothing to do
  StepChoice ChooseThisStep();
  // engine_worker_move.cc: whether a slot's memory is cheap enough to copy for a move
  // (SlotView::movable), and the moves the step policy chose (StepChoice::moves), each
  // slot's memory copied to the free sequence and the two slots trading indexes; where a copy
  // fails, it and the moves after it are undone in the choice and those slots stay.
  static bool MayMove(const Slot& slot);
  void ApplyMoves(StepChoice* choice);
  bool Move(const SlotMove& move);
  // Runs a step's calls, the highest class's first, stopping or skipping those a newly arrived
  // job outranks; true when one failed or was stopped.
  bool RunCalls(std::vector<std::vector<engine::DecodeItem>>* calls);
  // The highest Standing among the slots of a call (its items in sequence order).
  int CallStanding(const std::vector<engine::DecodeItem>& call) const;
  // Whether a call may be stopped or skipped for an arrival that outranks it: none of its
  // slots was stopped last time, and it verifies no draft.
  bool MayStop(const std::vector<engine::DecodeItem>& call) const;
  // One debug line a call: its standing, size, what became of it (ran, ran_whole: it could
  // not be stopped, stopped, skipped, put_off, failed) and how long it took.
  void LogCall(const std::vector<engine::DecodeItem>& call, int standing, const char* outcome, int64_t took_us) const;
  // A call stopped or skipped: its slots sat this step out for a higher class.
  void OnStopped(const std::vector<engine::DecodeItem>& call);
  // A call that ran: what a decode call, or a prompt token, costs (SharedPrefillTimeBudget).
  void NoteCallCost(const std::vector<engine::DecodeItem>& call, int64_t took_us);
  // Whether a call that may not be stopped is put off, not started, to the next step, behind
  // an arrival that outranks it: not in the step right after it was put off (it runs then),
  // and never one that verifies a draft. Marks it.
  bool Postpone(const std::vector<engine::DecodeItem>& call);
  // `limit`: the most tokens this slot may add (-1: the step's room is the only bound).
  bool AddPromptChunk(Slot& slot, std::vector<engine::DecodeItem>* batch, bool first_chunk, int64_t limit);
  std::vector<std::pair<Slot*, int32_t>> OutputsOf(const std::vector<engine::DecodeItem>& items);
  // Speculative decoding: drafts for the generating slots where it is on and pays, within
  // `room` tokens of the step; each slot's draft goes to Slot::draft.
  void DraftFor(const std::vector<Slot*>& generating, int64_t room);
  int32_t DraftLimit(const Slot& slot) const;
  // Samples the slot's pending token and then each draft token while the samples match the
  // draft; takes back the rejected rest of the draft.
  void Verify(Slot& slot, int32_t output_index);
  void AfterDecode(const std::vector<engine::DecodeItem>& items,
                   const std::vector<std::pair<Slot*, int32_t>>& outputs);
  void RecoverFailedStep(const std::vector<engine::DecodeItem>& batch, const Status& error);
  // Memory pressure (engine_worker_park.cc): a step the engine has no room for frees memory,
  // one slot at a time (idle slots' cached prefixes, then paused slots', then the running
  // slot that ranks lowest, which then waits for room), and is retried without what gave way.
  // `stop` (may be null): the call may be stopped when it turns true (Cancelled, nothing kept).
  Status DecodeFreeingMemory(std::vector<engine::DecodeItem>* call, const std::function<bool()>* stop);
  bool FreeOneIdleSlot();
  bool FreeOnePausedSlot();
  bool PreemptForMemory();
  // The slot's memory leaves the engine: parked in host memory within the budget, else
  // dropped to be recomputed.
  bool GiveUpMemory(Slot& slot);
  void Recompute(Slot& slot);
  // A full pool's refusal, with the numbers: what `slot` holds and needs, what the others hold.
  Status PoolFullError(const Slot& slot) const;
  // The context a job runs in: the model's, or less where the request asks (num_ctx).
  int64_t ContextFor(const Job& job) const;
  Status PromptTooLongError(size_t prompt_tokens, const Job& job) const;
  void ForgetParked(Slot& slot);
  // Parked slots the policy chose to run get their memory back; those that cannot sit out.
  void UnparkChosen(StepChoice* choice);
  // Pinned prefixes (engine_worker_pin.cc): made when the worker takes an engine.
  struct PinnedPrefix {
    std::vector<engine::TokenId> tokens;
    std::string state;          // Engine::ParkSequence bytes
    size_t computed_for = 0;    // the prompt length its tokens were computed as (AlikePrefix)
  };
  void PinPrompts();
  Result<PinnedPrefix> PinPrompt(const std::string& system);
  const PinnedPrefix* PinnedFor(const std::vector<engine::TokenId>& prompt, const std::vector<size_t>* cuts,
                                size_t keep) const;
  // A draft's guess for the token about to be sampled (its `position`th), and the verdict.
  struct DraftCheck {
    engine::TokenId guess = 0;
    size_t position = 0;
    bool accepted = false;  // out: the sampled token is the guess
  };
  // Samples the next token from `at` and handles it (text, stop, finish); `check`
  // (may be null) is judged before anything else, so the stats of a job that ends on this
  // token count it.
  void Sample(Slot& slot, const engine::Output& at, DraftCheck* check = nullptr);
  // `last`: the job's final text; it carries any log-probabilities not yet sent.
  void Emit(Slot& slot, std::string text, bool last = false);
  void Finish(Slot& slot, engine::FinishReason reason);
  void Fail(Slot& slot, const Status& status);
  void EndJob(Slot& slot);
  void RecordFinished(const engine::GenerationStats& st);
  bool AnyBusy() const;
  void ClearMemory();
  // Whether the idle time has run out with working memory held; mu_ held.
  bool ReleaseDue() const;
  // Frees the engine's working memory; engine thread, mu_ not held.
  void ReleaseWorkingMemory();
  // The idle time starts now and lasts `keep_alive_ms`, or idle_release_after_ms when unset
  // (< 0: no release); mu_ held, or before the thread starts.
  void StartIdleTime(std::optional<int64_t> keep_alive_ms);
  void PublishHealth();

  const WorkerOptions options_;
  const Clock& clock_;

  // The queue lock: what other threads hand the engine thread. Never held across engine work.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  JobQueue queue_;                           // guarded by mu_
  std::unique_ptr<engine::Engine> pending_;  // guarded by mu_: the engine to swap in
  std::vector<std::shared_ptr<JobChannel>> running_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  int64_t idle_since_ms_ = 0;                // guarded by mu_: when the last job ended
  int64_t release_after_ms_ = -1;            // guarded by mu_: idle time before a release
  // Who held the sequences at the last admission, and how many were free: whether a job
  // submitted since would be admitted at the next one (guarded by mu_).
  std::vector<Holder> admission_holders_;
  size_t admission_free_ = 0;
  // The highest Standing (step_policy.h) of the jobs submitted since the last admission that
  // it would admit (kNoStanding: none): a running call that stands below stops for them.
  std::atomic<int> arrived_standing_{kNoStanding};
  // When the one that set arrived_standing_ arrived (clock_ µs; -1: none), for the debug line
  // of a call it stopped: how long the stop took to take effect.
  std::atomic<int64_t> arrived_us_{-1};

  SessionStore sessions_;  // thread-safe itself
  // The one source of the Stats counters, guarded by stats_mu_.
  mutable std::mutex stats_mu_;
  uint32_t finished_ = 0;
  uint64_t prefilled_ = 0, decoded_ = 0;
  double prefill_ms_ = 0, decode_ms_ = 0;
  std::deque<double> ttfts_;  // the last 1000
  std::vector<engine::DevicePlacement> placement_;  // guarded by stats_mu_
  engine::MemoryUse memory_;                        // guarded by stats_mu_
  uint64_t releases_ = 0;                           // guarded by stats_mu_
  MeasuredCosts costs_;                             // guarded by stats_mu_: running means
  WorkerMetrics metrics_;     // token counters and histograms (thread-safe itself)

  // The engine's lifecycle: the engine thread holds it exclusively to swap the engine or free
  // its working memory, other threads share it to tokenize. The engine thread reads engine_
  // without it (no other thread writes it).
  mutable std::shared_mutex engine_mu_;
  std::unique_ptr<engine::Engine> engine_;    // written by the engine thread under engine_mu_
  std::vector<std::unique_ptr<Slot>> slots_;  // engine thread only
  CheckpointStore checkpoints_;               // engine thread only (counters: any)
  int64_t use_counter_ = 0;                   // engine thread only: LRU clock
  std::mt19937 synthetic_rng_{42};            // engine thread only: benchmark-only synthetic acceptance
  size_t busy_peak_ = 0, last_peak_ = 0;      // engine thread only: most slots busy at once, now
                                              // and in the last busy period (admission window)
  std::atomic<uint64_t> steps_{0}, prefix_copies_{0}, preemptions_{0}, sequence_moves_{0};
  uint64_t rounds_ = 0;  // engine thread: step policy rounds, run or not (throttling counts them)
  // Engine thread: the running means of a decode call's ms (no prompt tokens in it) and of a
  // prompt token's (calls of prompt tokens only, 16 or more); 0: none yet.
  double decode_call_ms_ = 0;
  double prompt_token_ms_ = 0;
  int64_t last_interactive_ms_ = -1;  // engine thread: when an interactive job last took a slot
  std::atomic<uint32_t> paused_{0}, parked_{0};
  std::atomic<uint64_t> parked_bytes_{0}, parks_{0}, recomputes_{0};
  std::vector<PinnedPrefix> pinned_;  // engine thread (the constructor, before it starts)
  std::atomic<uint32_t> pinned_count_{0};
  std::atomic<uint64_t> pinned_bytes_{0}, pinned_hits_{0};
  // The engine thread's view of its slots, for estimates on other threads.
  std::array<std::atomic<uint32_t>, kRequestClasses> busy_by_class_{};
  std::atomic<size_t> width_{0};
  DraftGovernor draft_governor_;  // engine thread: whether a step's drafts pay, measured
  uint64_t sampled_tokens_ = 0;   // engine thread: tokens sampled, for the governor's per-token times
  std::atomic<bool> model_loaded_{false};
  std::atomic<float> kv_usage_{0};
  std::atomic<uint8_t> device_index_{0};
  std::atomic<uint64_t> fingerprint_{0};
  std::atomic<int32_t> vocab_size_{0};
  std::atomic<int32_t> context_tokens_{0};
  std::atomic<int64_t> last_progress_ms_{0};
  std::thread thread_;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_ENGINE_WORKER_H_
