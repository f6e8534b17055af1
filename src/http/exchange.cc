#include "http/exchange.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "http/json_reply.h"
#include "http/overflow_fields.h"
#include "http/request_class_fields.h"
#include "sched/request_runner.h"

namespace llmd::http {
namespace {

// One choice while it runs: its text so far, the reply's parser, the deltas already sent.
struct Choice {
  Choice(uint32_t i, const char* id_prefix) : index(i), deltas([id_prefix] { return NewId(id_prefix); }) {}
  uint32_t index;
  std::string text;
  std::shared_ptr<const engine::ReplyParser> parser;
  ReplyDeltas deltas;
  sched::RunOutcome outcome;
};

// The choices of one request, run to their outcomes.
class ChoiceRun {
 public:
  ChoiceRun(const sched::RunRequest& base, uint32_t n, const ExchangeOptions& options, ReplySink& sink,
            const ExchangeEnv& env)
      : base_(base), sink_(sink), env_(env) {
    for (uint32_t i = 0; i < n; ++i) choices_.push_back(std::make_unique<Choice>(i, options.call_id_prefix));
  }

  // Every choice but the first on a server thread if one is free; the first, and those that
  // got none, on this one. Returns when all have ended.
  std::vector<std::unique_ptr<Choice>>& RunAll() {
    std::vector<Choice*> here = {choices_[0].get()};
    for (size_t i = 1; i < choices_.size(); ++i) {
      Choice* choice = choices_[i].get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++running_;
      }
      const bool started = env_.start_thread && env_.start_thread([this, choice] {
        RunOne(*choice);
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        ended_.notify_all();  // under the lock: this object may be gone once it is released
      });
      if (!started) {
        std::lock_guard<std::mutex> lock(mu_);
        --running_;
        here.push_back(choice);
      }
    }
    for (Choice* choice : here) RunOne(*choice);
    std::unique_lock<std::mutex> lock(mu_);
    ended_.wait(lock, [this] { return running_ == 0; });
    return choices_;
  }

 private:
  void RunOne(Choice& choice) {
    sched::RunRequest run = base_;  // each choice: its own job channel and seed
    run.job.channel = std::make_shared<sched::JobChannel>();
    if (choice.index > 0 && run.job.options.sampling.seed != engine::SamplingParams::kRandomSeed) {
      run.job.options.sampling.seed += choice.index;
    }
    if (run.job.stream) run.on_text = [this, &choice](const sched::JobEvent& ev) { return OnText(choice, ev); };
    choice.outcome = env_.run(std::move(run));
  }

  // A structured reply's text goes to the sink as the parser's deltas; plain text as it comes.
  bool OnText(Choice& choice, const sched::JobEvent& ev) {
    std::lock_guard<std::mutex> lock(mu_);
    choice.text += ev.text;
    if (ev.parser) choice.parser = ev.parser;
    ReplyPiece piece{choice.index, {}, ev.logprobs};
    if (choice.parser) piece.delta = choice.deltas.Next(choice.parser->Parse(choice.text, /*partial=*/true));
    else piece.delta.content = ev.text;
    return sink_.Piece(piece);
  }

  const sched::RunRequest& base_;
  ReplySink& sink_;
  const ExchangeEnv& env_;
  std::vector<std::unique_ptr<Choice>> choices_;
  std::mutex mu_;  // the sink's Piece, running_
  std::condition_variable ended_;
  size_t running_ = 0;  // choices on server threads not ended yet
};

// Which stop string ended `done`, if one did (its text has the stop cut, its tokens do not).
std::optional<std::string> StopSequence(const engine::Completion& done, const std::vector<std::string>& stops,
                                        const std::optional<std::string>& model, const ExchangeEnv& env) {
  if (done.stats.finish_reason != engine::FinishReason::kStop || stops.empty() || done.tokens.empty() ||
      !env.detokenize) {
    return std::nullopt;
  }
  auto all = env.detokenize(model, done.tokens);
  auto last = env.detokenize(model, {done.tokens.back()});
  if (!all.has_value() || !last.has_value()) return std::nullopt;
  return MatchedStopSequence(stops, *all, last->size());
}

// The end of every choice: the final parse, what the stream held back, the usage.
ExchangeEnd EndOf(std::vector<std::unique_ptr<Choice>>& choices, const sched::RunRequest& base,
                  const ExchangeOptions& options, const ExchangeEnv& env) {
  ExchangeEnd end;
  end.max_tokens = base.job.options.max_tokens;
  for (auto& choice : choices) {
    ChoiceEnd c;
    c.index = choice->index;
    c.completion = std::move(choice->outcome.completion);
    c.refused = choice->outcome.refused();
    if (c.refused) c.refusal = choice->outcome.error.message();
    c.final = ParseFinalReply(c.completion, choice->deltas);
    if (base.job.stream && c.completion.parser) c.rest = choice->deltas.Next(c.final.reply, /*final=*/true);
    if (options.stop_sequence && !c.refused) {
      c.stop_sequence = StopSequence(c.completion, base.job.stop, base.model, env);
    }
    const engine::GenerationStats& st = c.completion.stats;
    if (c.index == 0) {
      end.usage = st;  // the prompt is counted once
    } else {
      end.usage.generated_tokens += st.generated_tokens;
      end.usage.draft_tokens += st.draft_tokens;
      end.usage.accepted_draft_tokens += st.accepted_draft_tokens;
    }
    end.choices.push_back(std::move(c));
  }
  return end;
}

}  // namespace

ExchangeEnv ServerEnv(sched::ServerState& state, const Request& request, Responder& out) {
  ExchangeEnv env;
  if (request.peer.identified) {
    env.peer.uid = request.peer.uid;
    if (request.peer.gid != kNoGid) env.peer.gid = request.peer.gid;
  }
  env.class_header = request.header(kRequestClassHeader);
  env.deadline_header = request.header(kDeadlineHeader);
  env.overflow_header = request.header(kOverflowHeader);
  env.config = state.config();
  const std::vector<sched::AvailableModel> available = state.available();
  env.default_model = available.empty() ? std::string() : available.front().name;
  env.peer_fd = out.fd();
  env.run = [&state](sched::RunRequest request) { return sched::RequestRunner(state).Run(std::move(request)); };
  env.start_thread = [&out](const std::function<void()>& task) { return out.StartThread(task); };
  env.detokenize = [&state](const std::optional<std::string>& model,
                            const std::vector<engine::TokenId>& tokens) -> Result<std::string> {
    const sched::WorkerRef worker = state.WorkerFor(model);
    if (worker == nullptr) return NotFoundError("no such model");
    return worker->Detokenize(tokens, /*render_special=*/false);
  };
  return env;
}

int RunExchange(GenerationRequest request, const ExchangeOptions& options, ReplySink& sink,
                const ExchangeEnv& env) {
  const config::DaemonConfig& c = *env.config;
  const std::string model = request.model.value_or(env.default_model);
  if (config::IsEmbeddingModel(c, model)) {
    return sink.Fail(ApiErrorOf(InvalidArgumentError(
        "model '" + model + "' is loaded for embeddings (embedding_models); it does not generate")));
  }
  if (options.count_only) request.stream = false;
  if (!request.request_class) {
    auto header_class = RequestClassHeader(env.class_header);
    if (!header_class.has_value()) return sink.Fail(ApiErrorOf(header_class.error()));
    request.request_class = *header_class;
  }
  if (!request.overflow) {
    auto header_overflow = OverflowHeader(env.overflow_header);
    if (!header_overflow.has_value()) return sink.Fail(ApiErrorOf(header_overflow.error()));
    request.overflow = *header_overflow;
  }
  auto deadline = DeadlineHeader(env.deadline_header);
  if (!deadline.has_value()) return sink.Fail(ApiErrorOf(deadline.error()));
  request.first_token_deadline_ms = *deadline;
  sched::RunRequest base;
  base.api = options.api;
  base.model = request.model;
  // With the guard cascade on, the answer is generated whole and shown only after the guard
  // model's verdict; a refusal is an empty answer that each API names its own way.
  base.guard = !c.guard_model.empty() && !options.count_only;
  base.guarded_prompt = GuardedPrompt(request);
  const uint32_t n = std::max<uint32_t>(1, request.n);
  base.job = MakeGenerationJob(request, c, env.peer);
  base.job.count_only = options.count_only;
  if (Status s = base.job.options.sampling.Validate(); !s.ok()) return sink.Fail(ApiErrorOf(s));
  base.peer_fd = env.peer_fd;
  base.half_close_is_gone = true;
  base.timeout_ms = c.request_timeout_ms;

  ChoiceRun run(base, n, options, sink, env);
  std::vector<std::unique_ptr<Choice>>& choices = run.RunAll();
  // A client gone from any choice is gone; else the first choice that failed decides.
  for (const auto& choice : choices) {
    if (choice->outcome.kind == sched::RunOutcome::Kind::kPeerGone) return 0;
  }
  for (const auto& choice : choices) {
    const sched::RunOutcome& o = choice->outcome;
    if (o.kind == sched::RunOutcome::Kind::kError && !o.refused()) return sink.Fail(ApiErrorOf(o.error));
  }
  ExchangeEnd end = EndOf(choices, base, options, env);
  return sink.Finish(end);
}

Embedded RunEmbeddings(EmbeddingRun request, const char* api, const ExchangeEnv& env) {
  sched::RunRequest run;
  run.api = api;
  run.model = request.model;
  run.job.prompt = sched::EmbeddingInputs{std::move(request.inputs), request.truncate};
  run.job.keep_alive_ms = request.keep_alive_ms;
  if (request.context_tokens) {
    run.job.options.context_tokens = static_cast<int32_t>(*request.context_tokens);
  } else if (const config::ModelGenerationDefaults* d = config::FindModelDefaults(*env.config, request.model);
             d != nullptr && d->context_tokens) {
    run.job.options.context_tokens = *d->context_tokens;
  }
  run.peer_fd = env.peer_fd;
  run.half_close_is_gone = true;
  run.timeout_ms = env.config->request_timeout_ms;
  sched::RunOutcome outcome = env.run(std::move(run));
  Embedded out;
  out.client_gone = outcome.kind == sched::RunOutcome::Kind::kPeerGone;
  if (outcome.kind != sched::RunOutcome::Kind::kDone) {
    out.error = outcome.error;
    return out;
  }
  out.vectors = std::move(outcome.completion.embeddings);
  out.prompt_tokens = outcome.completion.stats.prompt_tokens;
  if (request.dimensions && !out.vectors.empty() &&
      *request.dimensions != static_cast<int64_t>(out.vectors[0].size())) {
    out.error = InvalidArgumentError("'dimensions' must be the model's own, " + std::to_string(out.vectors[0].size()) +
                                     " (llmd does not shorten embeddings)");
  }
  return out;
}

}  // namespace llmd::http
