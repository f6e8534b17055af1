#include "daemon/connection_handler.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"
#include "common/process_memory.h"
#include "common/utf8.h"
#include "format/session_file.h"
#include "daemon/client_rows.h"
#include "daemon/native_errors.h"
#include "engine/llama/llama_grammar.h"
#include "sched/job_settings.h"
#include "sched/model_admin.h"
#include "sched/request_runner.h"
#include "transport/frame_connection.h"

namespace llmd::daemon {
namespace {

// The lines a client can cause (a bad frame, a dropped connection, a denied shutdown) share
// one budget of 20 a second, so a flood of bad requests cannot flood the journal (robustness
// item 48g); what was dropped is counted in the next line that gets through. A burst of 20
// keeps the two or three lines one connection writes as it goes (write_failed, then
// client_gone) whole, for a few clients at once.
void LogClientEvent(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  static LogRateLimiter limiter(50, 20);
  long suppressed = 0;
  if (!limiter.Allow(&suppressed)) return;
  if (suppressed > 0) Log(LogLevel::kWarn, "client_lines_suppressed", {{"lines", std::to_string(suppressed)}});
  Log(level, event, fields);
}

using proto::ErrorCode;
using proto::Request;
using proto::Response;
using transport::FrameConnection;

// Keeps a reply frame under the 64 KiB limit, cutting text at a character boundary.
std::string EncodeBounded(Response r) {
  std::string payload = proto::EncodeResponse(r);
  if (payload.size() <= proto::kMaxFrameBytes) return payload;
  size_t excess = payload.size() - proto::kMaxFrameBytes;
  size_t keep = r.text.size() > excess ? r.text.size() - excess : 0;
  while (keep > 0 && (static_cast<unsigned char>(r.text[keep]) & 0xC0) == 0x80) --keep;
  r.text.resize(keep);
  return proto::EncodeResponse(r);
}

// The /metrics outcome of a generation's final response.
std::string OutcomeOf(const Response& r) {
  if (r.type != Response::Type::kError) return "ok";
  switch (r.code) {
    case ErrorCode::kBusy: return "busy";
    case ErrorCode::kRateLimited: return "rate_limited";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kInvalidPrompt:
    case ErrorCode::kContextOverflow:
    case ErrorCode::kUnsupported: return "invalid";
    case ErrorCode::kRefused: return "refused";
    default: return "error";
  }
}

// A request's structured-output constraint as the GBNF grammar its sampling follows. A JSON
// schema is converted here, on the connection's thread; a GBNF grammar is passed as it is, and
// one llama.cpp cannot parse is refused when its sampler is made (InvalidArgument either way).
Result<std::string> GrammarOf(const proto::Constraint& c) {
  switch (c.kind) {
    case proto::Constraint::Kind::kJsonSchema:
      return engine::JsonSchemaToGrammar(c.text);
    case proto::Constraint::Kind::kGbnfGrammar:
      // An empty grammar would mean "no constraint" to the engine: refuse it instead.
      if (c.text.find_first_not_of(" \t\r\n") == std::string::npos) {
        return InvalidArgumentError("the GBNF grammar is empty (it needs a rule \"root\")");
      }
      return c.text;
  }
  return InvalidArgumentError("unknown constraint kind");
}

Status RateLimited(int64_t wait_ms) {
  return ResourceExhaustedError("rate limited, retry after " + std::to_string(wait_ms) + " ms")
      .WithReason(ErrorReason::kRateLimited);
}

Response StatsResponse(const ServerContext& ctx) {
  sched::WorkerStats w = ctx.WorkerFor(std::nullopt)->stats();
  Response r;
  r.type = Response::Type::kServerStats;
  r.server_stats = {w.requests, static_cast<uint32_t>(std::min<uint64_t>(w.generated_tokens, UINT32_MAX)),
                    static_cast<float>(w.ttft_p50_ms), static_cast<float>(w.ttft_p95_ms),
                    static_cast<float>(w.prefill_tokens_per_second), static_cast<float>(w.decode_tokens_per_second),
                    static_cast<float>(w.cached_token_ratio), w.active, w.queued, w.sessions};
  auto mib = [](uint64_t bytes) { return static_cast<uint32_t>(std::min<uint64_t>(bytes >> 20, UINT32_MAX)); };
  r.server_stats.memory = proto::MemoryStats{
      .weights_resident_mib = mib(w.memory.weights.resident),
      .kv_reserved_mib = mib(w.memory.kv.reserved),
      .kv_resident_mib = mib(w.memory.kv.resident),
      .compute_mib = mib(w.memory.compute.reserved),
      .checkpoints_mib = mib(w.checkpoint_bytes),
      .process_resident_mib = mib(ReadProcessMemory().resident),
      .working_memory_releases = static_cast<uint32_t>(std::min<uint64_t>(w.working_memory_releases, UINT32_MAX))};
  r.server_stats.draft_tokens = static_cast<uint32_t>(std::min<uint64_t>(w.draft_tokens, UINT32_MAX));
  r.server_stats.accepted_draft_tokens = static_cast<uint32_t>(std::min<uint64_t>(w.accepted_draft_tokens, UINT32_MAX));
  r.server_stats.clients = ClientRows(ctx.clients().Snapshot());
  return r;
}

Response HealthResponse(const ServerContext& ctx) {
  const sched::WorkerRef worker = ctx.WorkerFor(std::nullopt);
  sched::HealthSnapshot h = worker != nullptr ? worker->health() : sched::HealthSnapshot{};
  Response r;
  r.type = Response::Type::kHealth;
  r.model_loaded = h.model_loaded;
  r.npu_core = h.device_index;
  r.kv_cache_usage = h.kv_cache_usage;
  return r;
}

// Root stops the daemon (no reply: the connection closes); anyone else gets
// PermissionDenied. Returns whether the connection may continue.
template <typename SendFn>
bool Shutdown(const transport::PeerCred& peer, ServerContext& ctx, SendFn send) {
  if (!transport::AccessPolicy::MayAdminister(peer)) {
    LogClientEvent(LogLevel::kWarn, "shutdown_denied", {{"uid", std::to_string(peer.uid)}});
    return send(Response::Error(ErrorCode::kPermissionDenied, "only root may shut the daemon down"));
  }
  Log(LogLevel::kInfo, "shutdown_requested", {{"uid", std::to_string(peer.uid)}});
  ctx.RequestShutdown();
  return false;
}

class Handler {
 public:
  Handler(FrameConnection& conn, const transport::PeerCred& peer, ServerContext& ctx)
      : conn_(conn), peer_(peer), ctx_(ctx), config_(ctx.config()) {}

  void Serve() {
    while (!ctx_.stopping()) {
      auto r = conn_.ReadFrame(static_cast<int>(config_->idle_timeout_ms),
                               static_cast<int>(config_->frame_timeout_ms), ctx_.stopping_flag());
      using O = FrameConnection::Outcome;
      if (r.outcome == O::kFrame) {
        if (!Handle(r.payload)) return;
        continue;
      }
      if (r.outcome == O::kProtocolError) {
        // The stream is out of sync: say why, then close.
        Send(Response::Error(ErrorCode::kInvalidPrompt, r.error.message()));
      }
      if (r.outcome != O::kClosed && r.outcome != O::kStopped) {
        LogClientEvent(LogLevel::kInfo, "connection_closed",
            {{"uid", std::to_string(peer_.uid)}, {"reason", std::string(transport::OutcomeName(r.outcome))},
             {"detail", r.error.message()}});
      }
      return;
    }
  }

 private:
  bool Send(const Response& r) {
    if (r.type == Response::Type::kError || r.type == Response::Type::kGenerated || r.type == Response::Type::kDone) {
      outcome_ = OutcomeOf(r);
    }
    Status s = conn_.WriteFrame(EncodeBounded(r), static_cast<int>(config_->write_timeout_ms));
    if (!s.ok()) {
      LogClientEvent(LogLevel::kInfo, "write_failed", {{"uid", std::to_string(peer_.uid)}, {"reason", s.message()}});
    }
    return s.ok();
  }

  bool SendError(const Status& s, bool seed) {
    return Send(Response::Error(WireCode(s, seed), s.message()));
  }

  // Returns false when the connection must close.
  bool Handle(const std::string& payload) {
    auto decoded = proto::DecodeRequest(payload);
    if (!decoded.has_value()) {
      const Status& e = decoded.error();
      ErrorCode code = e.code() == StatusCode::kUnimplemented ? ErrorCode::kUnsupported
                                                               : ErrorCode::kInvalidPrompt;
      return Send(Response::Error(code, "bad request: " + e.message()));
    }
    Request& req = *decoded;
    const bool seed = req.is_seed_request();
    if (int64_t wait_ms = ctx_.rate_limiter().Acquire(peer_.uid); wait_ms > 0) {
      return SendError(RateLimited(wait_ms), seed);
    }
    switch (req.type) {
      case Request::Type::kHealthCheck:
        return Send(HealthResponse(ctx_));
      case Request::Type::kShutdown:
        return Shutdown(peer_, ctx_, [&](const Response& r) { return Send(r); });
      case Request::Type::kGenerate:
      case Request::Type::kGenerateStream:
      case Request::Type::kChat: {
        outcome_.clear();
        const bool keep = Generate(req);
        ctx_.requests().Count("native", outcome_.empty() ? "client_gone" : outcome_);
        return keep;
      }
      case Request::Type::kEndSession: {
        Status s = NotFoundError("no chat session '" + req.session + "'");
        for (const auto& [name, w] : ctx_.models()) {
          if (s.ok()) break;
          s = w->EndSession(req.session);
        }
        if (!s.ok()) return SendError(s, false);
        Response ack;
        ack.type = Response::Type::kAck;
        return Send(ack);
      }
      case Request::Type::kSaveSession:
      case Request::Type::kRestoreSession:
      case Request::Type::kDeleteSession: {
        Status s = SessionFileRequest(req);
        if (!s.ok()) return SendError(s, false);
        Response ack;
        ack.type = Response::Type::kAck;
        return Send(ack);
      }
      case Request::Type::kStats:
        return Send(StatsResponse(ctx_));
      case Request::Type::kModels: {
        Response r;
        r.type = Response::Type::kModels;
        // Every model that can be served, loaded or not (models on demand load when named).
        for (const auto& m : ctx_.available()) r.models.push_back(m.name);
        return Send(r);
      }
      case Request::Type::kRunningModels: {
        Response r;
        r.type = Response::Type::kModels;
        for (const auto& m : ctx_.available()) {
          if (m.loaded) r.models.push_back(m.name);
        }
        return Send(r);
      }
      case Request::Type::kPullModel:
      case Request::Type::kCopyModel:
      case Request::Type::kDeleteModel:
        return ManageModels(req);
    }
    return false;
  }

  // PullModel, CopyModel, DeleteModel: root and admin_uids/admin_gids only (PermissionDenied
  // for others, saying who may); a pull streams PullProgress frames, then Ack.
  bool ManageModels(const Request& req) {
    if (!config::IsModelAdmin(*config_, peer_.uid, peer_.gid)) {
      return Send(Response::Error(ErrorCode::kPermissionDenied, std::string(config::kModelAdminRule) +
                                                                     "; this connection is uid " + std::to_string(peer_.uid)));
    }
    sched::ModelAdmin* admin = ctx_.model_admin();
    if (admin == nullptr) {
      return Send(Response::Error(ErrorCode::kUnsupported, "model management needs models_dir in the config"));
    }
    Status s;
    if (req.type == Request::Type::kCopyModel) {
      s = admin->Copy(req.model, req.destination);
    } else if (req.type == Request::Type::kDeleteModel) {
      s = admin->Delete(req.model);
    } else {
      bool client_here = true;
      auto pulled = admin->Pull(req.model, [&](const sched::PullProgress& p) {
        Response r;
        r.type = Response::Type::kPullProgress;
        r.pull_status = p.phase == sched::PullProgress::Phase::kResolving ? "pulling manifest" : "pulling " + p.file_name;
        r.pull_completed = p.done_bytes;
        r.pull_total = p.total_bytes > 0 ? static_cast<uint64_t>(p.total_bytes) : 0;
        return client_here = Send(r);
      }, nullptr);
      if (!client_here) return false;
      if (pulled.has_value()) {
        Response done;
        done.type = Response::Type::kPullProgress;
        done.pull_status = "success: model " + pulled->name;
        done.pull_completed = done.pull_total = pulled->bytes;
        if (!Send(done)) return false;
      }
      if (!pulled.has_value()) s = pulled.error();
    }
    if (!s.ok()) return SendError(s, false);
    Response ack;
    ack.type = Response::Type::kAck;
    return Send(ack);
  }

  // Save, restore or delete a chat session's file in session_dir. File work happens here,
  // on the connection's thread, never on the engine thread.
  Status SessionFileRequest(const Request& req) const {
    if (config_->session_dir.empty()) return UnimplementedError("session saving is off (set session_dir)");
    if (!format::IsValidSessionId(req.session)) {
      return InvalidArgumentError("session id must be 1..64 of A-Z a-z 0-9 . _ - (not starting with '.')");
    }
    const std::string path = config_->session_dir + "/" + req.session + ".llmds";
    switch (req.type) {
      case Request::Type::kSaveSession:
        // The session lives on the model that served it; the file records which.
        for (const auto& [name, w] : ctx_.models()) {
          auto session = w->SessionCopy(req.session);
          if (!session.has_value()) continue;
          format::SessionData data{std::move(session->system), std::move(session->tokens),
                                   std::move(session->turn_starts)};
          return format::WriteFileAtomically(path, format::EncodeSession(data, w->health().model_fingerprint));
        }
        return NotFoundError("no chat session '" + req.session + "'");
      case Request::Type::kRestoreSession: {
        LLMD_ASSIGN_OR_RETURN(std::string bytes, format::ReadSmallFile(path, format::kMaxSessionFileBytes));
        Status last;
        for (const auto& [name, w] : ctx_.models()) {
          const sched::HealthSnapshot model = w->health();
          auto data = format::DecodeSession(bytes, model.model_fingerprint, model.vocab_size);
          if (data.has_value()) {
            w->PutSession(req.session, sched::StoredSession{std::move(data->system), std::move(data->tokens),
                                                            std::move(data->turn_starts)});
            return Status::Ok();
          }
          last = data.error();
        }
        return last;
      }
      default:
        if (::unlink(path.c_str()) != 0) return NotFoundError("no saved session '" + req.session + "'");
        return Status::Ok();
    }
  }

  Result<sched::Job> MakeJob(const Request& req) const {
    const config::DaemonConfig& c = *config_;
    sched::Job job;
    const std::string system = req.params.system.value_or(c.system_prompt);
    if (req.prompt.empty() || std::all_of(req.prompt.begin(), req.prompt.end(), [](char ch) {
          return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
        })) {
      return InvalidArgumentError("prompt is empty");
    }
    if (req.max_tokens == 0u) return InvalidArgumentError("max_tokens must be >= 1");
    const auto& p = req.params;
    sched::GenerationSettings settings;
    settings.max_tokens = req.max_tokens;
    settings.temperature = p.temperature;
    settings.top_p = p.top_p;
    if (p.top_k) settings.top_k = static_cast<int32_t>(std::min<uint32_t>(*p.top_k, 1u << 20));
    settings.repeat_penalty = p.repeat_penalty;
    settings.seed = p.seed;
    settings.draft_max = p.draft_max;
    if (p.request_class) settings.request_class = static_cast<RequestClass>(*p.request_class);  // checked when read
    settings.peer = {peer_.uid, peer_.gid};
    settings.first_token_deadline_ms = p.first_token_deadline_ms;
    settings.model = p.model;
    sched::ApplyGenerationSettings(settings, c, &job);
    if (p.constraint) {
      LLMD_ASSIGN_OR_RETURN(job.options.sampling.grammar, GrammarOf(*p.constraint));
    }
    LLMD_RETURN_IF_ERROR(job.options.sampling.Validate());
    job.stream = req.type != Request::Type::kGenerate;
    if (p.overflow == proto::kOverflowDropOldest) job.overflow = engine::ContextOverflow::kDropOldest;  // checked when read
    if (req.type == Request::Type::kChat) {
      if (req.session.empty() || req.session.size() > 256) {
        return InvalidArgumentError("session id must be 1..256 bytes");
      }
      job.prompt = sched::SessionTurn{req.session, system, req.prompt};
    } else {
      job.prompt = sched::OneShotChat{system, req.prompt};
    }
    return job;
  }

  bool Generate(const Request& req) {
    const bool seed = req.is_seed_request();
    auto job = MakeJob(req);
    if (!job.has_value()) return SendError(job.error(), seed);
    if (config_->log_text) Log(LogLevel::kDebug, "prompt", {{"text", req.prompt}});
    sched::RunRequest run;
    run.api = "native";
    run.job = std::move(*job);
    run.model = req.params.model;
    run.guard = req.params.guard.value_or(!config_->guard_model.empty());
    run.guarded_prompt = req.prompt;
    run.peer_fd = conn_.fd();
    run.timeout_ms = config_->request_timeout_ms;
    const bool stream = run.job.stream;
    run.on_text = [this](const sched::JobEvent& event) {
      Response tok;
      tok.type = Response::Type::kToken;
      tok.text = event.text;
      return Send(tok);
    };
    sched::RunOutcome outcome = sched::RequestRunner(ctx_).Run(std::move(run));
    switch (outcome.kind) {
      case sched::RunOutcome::Kind::kPeerGone:
        LogClientEvent(LogLevel::kInfo, "client_gone", {{"uid", std::to_string(peer_.uid)}});
        return false;
      case sched::RunOutcome::Kind::kError: {
        const bool keep = SendError(outcome.error, seed);
        return keep && outcome.error.reason() != ErrorReason::kShuttingDown;
      }
      case sched::RunOutcome::Kind::kDone: break;
    }
    return Finish(outcome.completion, stream, outcome.guard_ms);
  }

  bool Finish(const engine::Completion& c, bool stream, double guard_ms) {
    const auto& st = c.stats;
    Log(LogLevel::kDebug, "generated",
        {{"uid", std::to_string(peer_.uid)}, {"prompt_tokens", std::to_string(st.prompt_tokens)},
         {"cached_tokens", std::to_string(st.cached_tokens)}, {"tokens", std::to_string(st.generated_tokens)},
         {"ttft_ms", std::to_string(st.ttft_ms)}, {"prefill_step", std::to_string(st.prefill_step)},
         {"first_token_step", std::to_string(st.first_token_step)},
         {"draft_tokens", std::to_string(st.draft_tokens)}, {"accepted_draft_tokens", std::to_string(st.accepted_draft_tokens)},
         {"dropped_tokens", std::to_string(st.dropped_tokens)}, {"dropped_turns", std::to_string(st.dropped_turns)},
         {"finish", std::string(engine::FinishReasonName(st.finish_reason))}});
    if (config_->log_text) Log(LogLevel::kDebug, "output", {{"text", c.text}});
    Response r;
    if (stream) {
      r.type = Response::Type::kDone;
      r.tokens_generated = static_cast<uint32_t>(st.generated_tokens);
      r.stats = {static_cast<uint32_t>(st.prompt_tokens), static_cast<uint32_t>(st.cached_tokens),
                 static_cast<float>(st.prefill_ms), static_cast<float>(st.ttft_ms),
                 static_cast<float>(st.decode_ms),
                 static_cast<proto::FinishReason>(static_cast<uint32_t>(st.finish_reason)),
                 static_cast<float>(guard_ms), static_cast<uint32_t>(st.draft_tokens),
                 static_cast<uint32_t>(st.accepted_draft_tokens), static_cast<uint32_t>(st.dropped_tokens),
                 static_cast<uint32_t>(st.dropped_turns)};
    } else {
      r.type = Response::Type::kGenerated;
      r.text = c.text;
      r.tokens_generated = static_cast<uint32_t>(st.generated_tokens);
    }
    return Send(r);
  }

  FrameConnection& conn_;
  transport::PeerCred peer_;
  ServerContext& ctx_;
  std::shared_ptr<const config::DaemonConfig> config_;
  std::string outcome_;  // of the current generation, for /metrics
};

}  // namespace

void ServeConnection(FrameConnection& conn, const transport::PeerCred& peer, ServerContext& ctx) {
  Handler(conn, peer, ctx).Serve();
}

bool TriageWaiting(FrameConnection& conn, const transport::PeerCred& peer, ServerContext& ctx) {
  auto r = conn.ReadFrame(0, 0, nullptr);  // what has arrived; never wait here
  using O = FrameConnection::Outcome;
  if (r.outcome == O::kIdleTimeout || r.outcome == O::kFrameTimeout) return false;  // not yet
  if (r.outcome == O::kProtocolError) {  // as a handler would: say why, log, close
    (void)conn.WriteFrame(proto::EncodeResponse(Response::Error(ErrorCode::kInvalidPrompt, r.error.message())),
                          static_cast<int>(ctx.config()->write_timeout_ms));
    LogClientEvent(LogLevel::kInfo, "connection_closed",
                   {{"uid", std::to_string(peer.uid)}, {"reason", "protocol_error"}, {"detail", r.error.message()}});
    return true;
  }
  if (r.outcome != O::kFrame) return true;          // closed, broken or too slow
  auto req = proto::DecodeRequest(r.payload);
  const int write_ms = static_cast<int>(ctx.config()->write_timeout_ms);
  auto send = [&](const Response& resp) { return conn.WriteFrame(proto::EncodeResponse(resp), write_ms).ok(); };
  if (req.has_value() && req->type == Request::Type::kHealthCheck) {
    if (int64_t wait_ms = ctx.rate_limiter().Acquire(peer.uid); wait_ms > 0) {
      send(Response::Error(ErrorCode::kInternalError, RateLimited(wait_ms).message()));
    } else {
      send(HealthResponse(ctx));
    }
    return true;
  }
  if (req.has_value() && req->type == Request::Type::kShutdown) {
    Shutdown(peer, ctx, send);
    return true;
  }
  conn.PushBack(std::move(r.payload));
  return false;
}

void RefuseBusy(FrameConnection& conn, const std::string& why) {
  // Only what already arrived: never wait on a connection we are refusing.
  auto r = conn.ReadFrame(0, 0, nullptr);
  if (r.outcome == FrameConnection::Outcome::kProtocolError) {  // its frame is the problem, not our load
    (void)conn.WriteFrame(proto::EncodeResponse(Response::Error(ErrorCode::kInvalidPrompt, r.error.message())), 100);
  } else if (r.outcome == FrameConnection::Outcome::kFrame) {
    auto req = proto::DecodeRequest(r.payload);
    bool seed = !req.has_value() || req->is_seed_request();
    (void)conn.WriteFrame(proto::EncodeResponse(Response::Error(
                        seed ? ErrorCode::kInternalError : ErrorCode::kBusy, why)),
                    100);
  }
}

}  // namespace llmd::daemon
