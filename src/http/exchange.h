// RunExchange: the one life of a generation request on every HTTP API, between the request
// its parser made (GenerationRequest) and the bytes of its reply. Each API is a parser (wire
// -> GenerationRequest) and a ReplySink (what happened -> wire); everything in between is
// here, once:
//   - the checks before any work: the model generates (not an embedding model), the
//     sampling settings are valid; the headers every API shares (X-Llmd-Class,
//     X-Llmd-Deadline-Ms, X-Llmd-Overflow) read, a body field winning over its header;
//   - the job (MakeGenerationJob: the configured defaults and caps), the model and the guard;
//   - its run and wait (the request runner: deadline, peer hang-up, drain);
//   - the partial parse of a streamed reply into text, reasoning and tool-call pieces, and
//     at the end the final parse with what the partial parses held back;
//   - `n` choices, each its own job, on threads the server owns and counts (ExchangeEnv::
//     start_thread); a choice that gets no thread runs on the request's own, after the first;
//   - the outcome: the reply, an error before or after the stream began, a client that left,
//     a guard refusal (a reply whose text is empty, finished with `refused`).
//
// Thread-safety: RunExchange may run on any number of threads at once. The sink's Piece is
// called under the exchange's lock (one call at a time, also with `n` > 1); Finish and Fail
// after every choice has ended.
#ifndef LLMD_HTTP_EXCHANGE_H_
#define LLMD_HTTP_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/types.h"
#include "http/api_error.h"
#include "http/generation.h"
#include "http/generation_request.h"
#include "http/http_server.h"
#include "http/reply_deltas.h"
#include "llmd/result.h"
#include "sched/run_request.h"
#include "sched/server_state.h"

namespace llmd::http {

// What a streamed reply adds: a choice's next piece, parsed.
struct ReplyPiece {
  uint32_t choice = 0;
  // What the parse of the text so far adds (a structured reply), or the new text (a plain
  // one). Empty while a partial parse holds text back; the piece still comes, so that a sink
  // may begin its stream (an API whose opening events go out with the first token).
  ReplyDelta delta;
  const std::vector<engine::TokenLogprob>& logprobs;  // of the tokens since the last piece
};

// How one choice ended.
struct ChoiceEnd {
  uint32_t index = 0;
  // The final parse (ids as the stream gave them), whether it is calls, whether it was cut.
  FinalReply final;
  // After a stream: what the partial parses held back, to send before the end (empty for a
  // plain reply). APIs whose block stream catches up itself use `final.reply` instead.
  ReplyDelta rest;
  engine::Completion completion;  // its text, tokens, stats and log-probabilities
  // Which stop string ended the reply, when ExchangeOptions::stop_sequence asked.
  std::optional<std::string> stop_sequence;
  bool refused = false;  // the guard refused the answer: its text is empty
  std::string refusal;   // the guard's words
};

struct ExchangeEnd {
  std::vector<ChoiceEnd> choices;  // by index
  // The prompt counted once, the generated and drafted tokens summed over the choices.
  engine::GenerationStats usage;
  int32_t max_tokens = 0;  // the job's limit, after the configured cap
};

// The wire side of an exchange: one per request.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // A streamed piece (only for a streamed request). False: the client cannot take it (gone,
  // stopped reading): the job is cancelled.
  virtual bool Piece(const ReplyPiece& piece) = 0;
  // The end: the whole reply, or the rest of the stream. Returns the HTTP status sent, 0 when
  // the client left first.
  virtual int Finish(ExchangeEnd& end) = 0;
  // An error: as an HTTP error in the API's shape if nothing was sent yet, else in the stream
  // as the API says. Returns the error's HTTP status, 0 when the client left first.
  virtual int Fail(const ApiError& error) = 0;
};

// What one API's exchange is.
struct ExchangeOptions {
  const char* api = "openai";           // RunRequest::api: the front end, in logs
  const char* call_id_prefix = "call_";  // the ids of tool calls ("toolu_" for Anthropic)
  bool stop_sequence = false;           // find which stop string ended each reply
  bool count_only = false;              // count the prompt's tokens; nothing is generated
};

// What an exchange runs on. The daemon's is ServerEnv; tests give their own.
struct ExchangeEnv {
  std::shared_ptr<const config::DaemonConfig> config;
  std::string default_model;  // the model of a request that names none
  int peer_fd = -1;           // watched for the client hanging up; -1: none
  PeerIdentity peer;          // who sent the request (its class's default and ceiling)
  std::string class_header;     // X-Llmd-Class, "" when absent
  std::string deadline_header;  // X-Llmd-Deadline-Ms, "" when absent
  std::string overflow_header;  // X-Llmd-Overflow, "" when absent
  // Runs a request to its outcome (sched::RequestRunner).
  std::function<sched::RunOutcome(sched::RunRequest)> run;
  // Starts `task` on a thread the server owns and counts; false (nothing runs) when none is
  // free. Null: every choice runs on the caller's thread.
  std::function<bool(const std::function<void()>&)> start_thread;
  // The text of `tokens` as `model` writes them (special tokens not rendered).
  std::function<Result<std::string>(const std::optional<std::string>& model,
                                    const std::vector<engine::TokenId>& tokens)>
      detokenize;
};

// The daemon's: its config, models, request runner and the connection's server threads.
ExchangeEnv ServerEnv(sched::ServerState& state, const Request& request, Responder& out);

// Runs `request` and answers it through `sink`. Returns the HTTP status sent, 0 when the
// client left first.
int RunExchange(GenerationRequest request, const ExchangeOptions& options, ReplySink& sink,
                const ExchangeEnv& env);

// Embeddings, on every API that has them (OpenAI's /v1/embeddings, Ollama's /api/embed): the
// request's run, with the same peer, deadline and model choice as a generation.
struct EmbeddingRun {
  std::optional<std::string> model;      // none: the default
  std::vector<std::string> inputs;
  std::optional<int64_t> dimensions;     // must be the model's own: llmd does not shorten them
  std::optional<int64_t> keep_alive_ms;  // Ollama's keep_alive
  // Ollama's options.num_ctx: the most tokens one input may hold; none: the model's
  // manifest's num_ctx, else the model's context.
  std::optional<int64_t> context_tokens;
  bool truncate = false;  // Ollama's /api/embed truncate: an input over the context keeps its start
};
struct Embedded {
  bool client_gone = false;  // the client left first: answer nothing
  Status error;              // else, when not ok, the answer is this error
  std::vector<std::vector<float>> vectors;
  int32_t prompt_tokens = 0;
};
Embedded RunEmbeddings(EmbeddingRun request, const char* api, const ExchangeEnv& env);

}  // namespace llmd::http

#endif  // LLMD_HTTP_EXCHANGE_H_
