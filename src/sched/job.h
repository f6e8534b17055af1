// Job: one generation request as the scheduler sees it, and the channel its events come back
// on. Front ends build jobs from their wire formats; nothing here knows a protocol.
#ifndef LLMD_SCHED_JOB_H_
#define LLMD_SCHED_JOB_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "chat/prompt_pieces.h"
#include "common/request_class.h"
#include "engine/types.h"

namespace llmd::sched {

// What to generate from: exactly one of these.
struct OneShotChat {  // {system, user} through the model's template (the seed's Generate)
  std::string system;
  std::string user;
};
struct SessionTurn {  // the next turn of a named chat session (created if new)
  std::string session;
  std::string system;  // used when the session is new
  std::string user;
  // Set by the worker as it builds the prompt: where each turn's user message starts in it
  // (the session's turns, then this one's), recorded with the session (StoredSession).
  std::vector<uint32_t> turn_starts;
};
struct Conversation {  // a whole conversation (OpenAI messages)
  std::vector<chat::Message> messages;
  engine::ChatFormat format;  // tools, schema, thinking
};
struct RawCompletion {  // plain text, no template
  std::string prompt;
};
struct EmbeddingInputs {  // texts to embed with a model loaded for embeddings; nothing is generated
  std::vector<std::string> texts;
  // An input longer than the context keeps its first tokens (Ollama's /api/embed truncate);
  // else it is refused with the counts.
  bool truncate = false;
};
using PromptSource = std::variant<OneShotChat, SessionTurn, Conversation, RawCompletion, EmbeddingInputs>;

// The error of a job the daemon could not run or finish because it is stopping.
inline Status ShuttingDownError() {
  return UnavailableError("the daemon is shutting down").WithReason(ErrorReason::kShuttingDown);
}

// What a job produces, in order: zero or more kText events, then one kDone or kError.
struct JobEvent {
  enum class Type { kText, kDone, kError };
  static JobEvent Text(std::string text) { return {Type::kText, std::move(text), {}, {}, {}, {}}; }
  static JobEvent Done(engine::Completion completion) { return {Type::kDone, {}, {}, {}, std::move(completion), {}}; }
  static JobEvent Error(Status error) { return {Type::kError, {}, {}, {}, {}, std::move(error)}; }

  Type type;
  std::string text;                                     // kText
  std::vector<engine::TokenLogprob> logprobs;           // kText: the tokens since the last event
  std::shared_ptr<const engine::ReplyParser> parser;    // kText: the reply's parser, if any
  engine::Completion completion;                        // kDone
  Status error;                                         // kError
};

// A job's mailbox: the engine thread pushes, the requester waits. Its eventfd becomes
// readable whenever events are pending, so a connection thread can poll it together with its
// socket. Cancel() asks the engine to stop at its next step.
// Thread-safety: every method is thread-safe.
class JobChannel {
 public:
  JobChannel();
  ~JobChannel();
  JobChannel(const JobChannel&) = delete;
  JobChannel& operator=(const JobChannel&) = delete;

  void Push(JobEvent event);
  // Takes the next event, if any (non-blocking).
  std::optional<JobEvent> TryPop();
  // Waits up to `timeout_ms` for an event to be pending.
  void Wait(int timeout_ms) const;
  int event_fd() const { return event_fd_; }

  void Cancel() { cancel_.store(true); }
  bool cancelled() const { return cancel_.load(); }

 private:
  std::mutex mu_;
  std::deque<JobEvent> events_;  // guarded by mu_
  int event_fd_;
  std::atomic<bool> cancel_{false};
};

struct Job {
  PromptSource prompt;
  bool sanitize = true;             // apply the seed's input sanitizer to user text
  std::vector<std::string> stop;    // stop strings: the text ends before the first one
  engine::GenerateOptions options;
  bool stream = false;              // send kText events as text is generated
  // Build and count the prompt only: Done carries stats.prompt_tokens; nothing is decoded,
  // no slot is touched and nothing is counted as a finished request.
  bool count_only = false;
  // A chat prompt longer than the context: refused with the counts, or its oldest whole turns
  // dropped (sched/prompt_overflow.h). Prompts without turns are refused either way.
  engine::ContextOverflow overflow = engine::ContextOverflow::kError;
  // Set by the worker when it dropped turns to fit (reported in the Completion's stats).
  int32_t dropped_tokens = 0;
  int32_t dropped_turns = 0;
  // How long the model keeps its working memory once idle after this job, instead of
  // WorkerOptions::idle_release_after_ms (Ollama's keep_alive); < 0: until the next job says.
  std::optional<int64_t> keep_alive_ms;
  // Who waits on the answer (common/request_class.h), resolved against the peer's ceiling by
  // the front end; the scheduler serves the higher class first and pauses lower ones for it.
  RequestClass request_class = RequestClass::kNormal;
  std::optional<uint32_t> peer_uid;  // whose turn it is within a class; unknown: one peer of its own
  // The first token is wanted within this many ms of submission: a job the scheduler expects
  // to miss it is refused at once with the expected wait (kDeadlineUnmeetable), and one still
  // queued when it passes ends with DeadlineExceeded. None: no deadline.
  std::optional<int64_t> first_token_deadline_ms;
  std::shared_ptr<JobChannel> channel = std::make_shared<JobChannel>();
  int64_t submitted_ms = 0;         // set by EngineWorker::Submit from its clock
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_JOB_H_
