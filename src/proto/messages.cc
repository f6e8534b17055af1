#include "proto/messages.h"

#include "common/request_class.h"
#include "proto/postcard.h"

namespace llmd::proto {
namespace {

void WriteParams(PostcardWriter& w, const GenerateParams& p) {
  auto str = [&](const std::string& s) { w.String(s); };
  auto f32 = [&](float v) { w.F32(v); };
  auto u32 = [&](uint32_t v) { w.Varint(v); };
  w.Option(p.system, str);
  w.Option(p.temperature, f32);
  w.Option(p.top_p, f32);
  w.Option(p.top_k, u32);
  w.Option(p.repeat_penalty, f32);
  w.Option(p.seed, u32);
  w.Option(p.model, str);
  w.Option(p.guard, [&](bool v) { w.Bool(v); });
  w.Option(p.constraint, [&](const Constraint& c) {
    w.U8(static_cast<uint8_t>(c.kind));
    w.String(c.text);
  });
  w.Option(p.draft_max, u32);
  // Written only when set, so a request that names no class is byte for byte what it was
  // before the field (and what a daemon from before it reads).
  const bool later = p.first_token_deadline_ms || p.overflow;  // a field after these is written
  if (p.request_class || later) w.Option(p.request_class, [&](uint8_t v) { w.U8(v); });
  if (later) w.Option(p.first_token_deadline_ms, u32);
  if (p.overflow) w.Option(p.overflow, [&](uint8_t v) { w.U8(v); });
}

// Constraint { kind: u8, text: String }: the kind is one raw byte, the text at most
// kMaxConstraintBytes. An unknown kind is Unimplemented, as an unknown request variant is: a
// newer client asked for what this daemon does not have.
Status ReadConstraint(PostcardReader& r, Constraint* c) {
  uint8_t kind;
  LLMD_RETURN_IF_ERROR(r.U8(&kind));
  if (kind >= kConstraintKinds) {
    return UnimplementedError("unsupported constraint kind " + std::to_string(kind) +
                              " (0: JSON schema, 1: GBNF grammar)");
  }
  c->kind = static_cast<Constraint::Kind>(kind);
  return r.String(&c->text, kMaxConstraintBytes);
}

Status ReadParams(PostcardReader& r, GenerateParams* p) {
  auto str = [&](std::string* s) { return r.String(s); };
  auto f32 = [&](float* v) { return r.F32(v); };
  auto u32 = [&](uint32_t* v) { return r.Varint32(v); };
  LLMD_RETURN_IF_ERROR(r.Option(&p->system, str));
  LLMD_RETURN_IF_ERROR(r.Option(&p->temperature, f32));
  LLMD_RETURN_IF_ERROR(r.Option(&p->top_p, f32));
  LLMD_RETURN_IF_ERROR(r.Option(&p->top_k, u32));
  LLMD_RETURN_IF_ERROR(r.Option(&p->repeat_penalty, f32));
  LLMD_RETURN_IF_ERROR(r.Option(&p->seed, u32));
  LLMD_RETURN_IF_ERROR(r.Option(&p->model, str));
  LLMD_RETURN_IF_ERROR(r.Option(&p->guard, [&](bool* v) { return r.Bool(v); }));
  LLMD_RETURN_IF_ERROR(
      r.Option(&p->constraint, [&](Constraint* c) { return ReadConstraint(r, c).WithContext("constraint"); }));
  // A client from before draft_max ends the frame here, and one from before request_class
  // after draft_max: the server's defaults.
  if (r.done()) return Status::Ok();
  LLMD_RETURN_IF_ERROR(r.Option(&p->draft_max, u32));
  if (r.done()) return Status::Ok();
  LLMD_RETURN_IF_ERROR(r.Option(&p->request_class, [&](uint8_t* v) -> Status {
    LLMD_RETURN_IF_ERROR(r.U8(v));
    if (*v >= kRequestClasses) {
      return InvalidArgumentError("request_class " + std::to_string(*v) +
                                  " is not a class (0 interactive, 1 normal, 2 background)");
    }
    return Status::Ok();
  }));
  if (r.done()) return Status::Ok();
  LLMD_RETURN_IF_ERROR(r.Option(&p->first_token_deadline_ms, u32));
  if (r.done()) return Status::Ok();
  return r.Option(&p->overflow, [&](uint8_t* v) -> Status {
    LLMD_RETURN_IF_ERROR(r.U8(v));
    if (*v >= kOverflowPolicies) {
      return InvalidArgumentError("overflow " + std::to_string(*v) + " is not a policy (0 error, 1 drop_oldest)");
    }
    return Status::Ok();
  });
}

// The draft counters appended to Done's Stats and to ServerStats: a message from an older llmd
// ends before them, and they read as 0.
Status ReadAppendedCounters(PostcardReader& r, uint32_t* drafted, uint32_t* accepted) {
  if (r.done()) return Status::Ok();
  LLMD_RETURN_IF_ERROR(r.Varint32(drafted));
  return r.Varint32(accepted);
}

// ClientStats { uid: String, request_class: u8, requests: u32, refused_budget: u32,
// refused_queue_full: u32, refused_busy: u32, refused_deadline: u32, queue_wait_ms: f32,
// ttft_ms: f32, prompt_tokens: u32, cached_tokens: u32, generated_tokens: u32, preemptions: u32 }
void WriteClient(PostcardWriter& w, const ClientStats& c) {
  w.String(c.uid);
  w.U8(c.request_class);
  for (uint32_t v : {c.requests, c.refused_budget, c.refused_queue_full, c.refused_busy, c.refused_deadline}) {
    w.Varint(v);
  }
  w.F32(c.queue_wait_ms);
  w.F32(c.ttft_ms);
  for (uint32_t v : {c.prompt_tokens, c.cached_tokens, c.generated_tokens, c.preemptions}) w.Varint(v);
}

Status ReadClient(PostcardReader& r, ClientStats* c) {
  LLMD_RETURN_IF_ERROR(r.String(&c->uid, kMaxClientUidBytes));
  LLMD_RETURN_IF_ERROR(r.U8(&c->request_class));
  if (c->request_class >= kRequestClasses) {
    return InvalidArgumentError("client request_class " + std::to_string(c->request_class) + " is not a class");
  }
  for (uint32_t* v : {&c->requests, &c->refused_budget, &c->refused_queue_full, &c->refused_busy,
                      &c->refused_deadline}) {
    LLMD_RETURN_IF_ERROR(r.Varint32(v));
  }
  LLMD_RETURN_IF_ERROR(r.F32(&c->queue_wait_ms));
  LLMD_RETURN_IF_ERROR(r.F32(&c->ttft_ms));
  for (uint32_t* v : {&c->prompt_tokens, &c->cached_tokens, &c->generated_tokens, &c->preemptions}) {
    LLMD_RETURN_IF_ERROR(r.Varint32(v));
  }
  return Status::Ok();
}

// The per-client rows appended to ServerStats: a reply that ends before them has none.
Status ReadClients(PostcardReader& r, std::vector<ClientStats>* clients) {
  if (r.done()) return Status::Ok();
  uint32_t n;
  LLMD_RETURN_IF_ERROR(r.Varint32(&n));
  if (n > r.remaining()) return InvalidArgumentError("client count " + std::to_string(n) + " exceeds the message");
  clients->resize(n);
  for (ClientStats& c : *clients) LLMD_RETURN_IF_ERROR(ReadClient(r, &c).WithContext("client"));
  return Status::Ok();
}

Status Finished(const PostcardReader& r) {
  if (!r.done()) {
    return InvalidArgumentError(std::to_string(r.remaining()) +
                                " unexpected trailing bytes after the message");
  }
  return Status::Ok();
}

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  static constexpr std::string_view kNames[kErrorCodeCount] = {
      "ModelNotLoaded", "GenerationFailed", "InvalidPrompt", "Timeout",
      "InternalError",  "PermissionDenied", "Busy",          "RateLimited",
      "ContextOverflow", "Unsupported",     "ShuttingDown",  "Cancelled",     "Refused"};
  auto i = static_cast<uint32_t>(code);
  return i < kErrorCodeCount ? kNames[i] : "Unknown";
}

Response Response::Error(ErrorCode code, std::string message) {
  Response r;
  r.type = Type::kError;
  r.code = code;
  r.text = std::move(message);
  return r;
}

std::string EncodeRequest(const Request& r) {
  PostcardWriter w;
  w.Varint(static_cast<uint32_t>(r.type));
  if (r.type == Request::Type::kChat || (r.type >= Request::Type::kEndSession && r.type <= Request::Type::kDeleteSession)) {
    if (r.type != Request::Type::kStats && r.type != Request::Type::kModels) w.String(r.session);
  }
  if (r.type == Request::Type::kPullModel || r.type == Request::Type::kCopyModel ||
      r.type == Request::Type::kDeleteModel) {
    w.String(r.model);
  }
  if (r.type == Request::Type::kCopyModel) w.String(r.destination);
  if (r.type == Request::Type::kGenerate || r.type == Request::Type::kGenerateStream ||
      r.type == Request::Type::kChat) {
    w.String(r.prompt);
    w.Option(r.max_tokens, [&](uint32_t v) { w.Varint(v); });
  }
  if (r.type == Request::Type::kGenerateStream || r.type == Request::Type::kChat) WriteParams(w, r.params);
  return w.Take();
}

Result<Request> DecodeRequest(std::string_view payload) {
  PostcardReader r(payload);
  uint32_t variant;
  LLMD_RETURN_IF_ERROR(r.Varint32(&variant));
  Request req;
  switch (variant) {
    case 0:
    case 3:
    case 4:
      req.type = static_cast<Request::Type>(variant);
      if (variant == 4) LLMD_RETURN_IF_ERROR(r.String(&req.session));
      LLMD_RETURN_IF_ERROR(r.String(&req.prompt));
      LLMD_RETURN_IF_ERROR(r.Option(&req.max_tokens, [&](uint32_t* v) { return r.Varint32(v); }));
      if (variant != 0) LLMD_RETURN_IF_ERROR(ReadParams(r, &req.params));
      break;
    case 5:
    case 8:
    case 9:
    case 10:
      req.type = static_cast<Request::Type>(variant);
      LLMD_RETURN_IF_ERROR(r.String(&req.session));
      break;
    case 1:
    case 2:
    case 6:
    case 7:
    case 14:
      req.type = static_cast<Request::Type>(variant);
      break;
    case 11:
    case 12:
    case 13:
      req.type = static_cast<Request::Type>(variant);
      LLMD_RETURN_IF_ERROR(r.String(&req.model));
      if (variant == 12) LLMD_RETURN_IF_ERROR(r.String(&req.destination));
      break;
    default:
      return UnimplementedError("unsupported request variant " + std::to_string(variant));
  }
  LLMD_RETURN_IF_ERROR(Finished(r));
  return req;
}

std::string EncodeResponse(const Response& r) {
  PostcardWriter w;
  w.Varint(static_cast<uint32_t>(r.type));
  switch (r.type) {
    case Response::Type::kGenerated:
      w.String(r.text);
      w.Varint(r.tokens_generated);
      break;
    case Response::Type::kError:
      w.Varint(static_cast<uint32_t>(r.code));
      w.String(r.text);
      break;
    case Response::Type::kHealth:
      w.Bool(r.model_loaded);
      w.U8(r.npu_core);
      w.F32(r.kv_cache_usage);
      break;
    case Response::Type::kToken:
      w.String(r.text);
      break;
    case Response::Type::kDone:
      w.Varint(r.tokens_generated);
      w.Varint(r.stats.prompt_tokens);
      w.Varint(r.stats.cached_tokens);
      w.F32(r.stats.prefill_ms);
      w.F32(r.stats.ttft_ms);
      w.F32(r.stats.decode_ms);
      w.Varint(static_cast<uint32_t>(r.stats.finish_reason));
      w.F32(r.stats.guard_ms);
      w.Varint(r.stats.draft_tokens);
      w.Varint(r.stats.accepted_draft_tokens);
      w.Varint(r.stats.dropped_tokens);
      w.Varint(r.stats.dropped_turns);
      break;
    case Response::Type::kAck:
      break;
    case Response::Type::kPullProgress:
      w.String(r.pull_status);
      w.Varint(r.pull_completed);
      w.Varint(r.pull_total);
      break;
    case Response::Type::kServerStats: {
      const ServerStats& st = r.server_stats;
      w.Varint(st.requests);
      w.Varint(st.generated_tokens);
      for (float f : {st.ttft_p50_ms, st.ttft_p95_ms, st.prefill_tokens_per_second,
                      st.decode_tokens_per_second, st.cached_token_ratio}) {
        w.F32(f);
      }
      w.Varint(st.active);
      w.Varint(st.queued);
      w.Varint(st.sessions);
      w.Option(st.memory, [&](const MemoryStats& m) {  // appended, as are the draft counters
        for (uint32_t v : {m.weights_resident_mib, m.kv_reserved_mib, m.kv_resident_mib, m.compute_mib,
                           m.checkpoints_mib, m.process_resident_mib, m.working_memory_releases}) {
          w.Varint(v);
        }
      });
      w.Varint(st.draft_tokens);
      w.Varint(st.accepted_draft_tokens);
      if (!st.clients.empty()) {
        w.Varint(st.clients.size());
        for (const ClientStats& c : st.clients) WriteClient(w, c);
      }
      break;
    }
    case Response::Type::kModels:
      w.Varint(r.models.size());
      for (const auto& m : r.models) w.String(m);
      break;
  }
  return w.Take();
}

Result<Response> DecodeResponse(std::string_view payload) {
  PostcardReader r(payload);
  uint32_t variant;
  LLMD_RETURN_IF_ERROR(r.Varint32(&variant));
  Response resp;
  resp.type = static_cast<Response::Type>(variant);
  switch (variant) {
    case 0:
      LLMD_RETURN_IF_ERROR(r.String(&resp.text));
      LLMD_RETURN_IF_ERROR(r.Varint32(&resp.tokens_generated));
      break;
    case 1: {
      uint32_t code;
      LLMD_RETURN_IF_ERROR(r.Varint32(&code));
      if (code >= kErrorCodeCount) return InvalidArgumentError("unknown error code " + std::to_string(code));
      resp.code = static_cast<ErrorCode>(code);
      LLMD_RETURN_IF_ERROR(r.String(&resp.text));
      break;
    }
    case 2:
      LLMD_RETURN_IF_ERROR(r.Bool(&resp.model_loaded));
      LLMD_RETURN_IF_ERROR(r.U8(&resp.npu_core));
      LLMD_RETURN_IF_ERROR(r.F32(&resp.kv_cache_usage));
      break;
    case 3:
      LLMD_RETURN_IF_ERROR(r.String(&resp.text));
      break;
    case 4: {
      uint32_t finish;
      LLMD_RETURN_IF_ERROR(r.Varint32(&resp.tokens_generated));
      LLMD_RETURN_IF_ERROR(r.Varint32(&resp.stats.prompt_tokens));
      LLMD_RETURN_IF_ERROR(r.Varint32(&resp.stats.cached_tokens));
      LLMD_RETURN_IF_ERROR(r.F32(&resp.stats.prefill_ms));
      LLMD_RETURN_IF_ERROR(r.F32(&resp.stats.ttft_ms));
      LLMD_RETURN_IF_ERROR(r.F32(&resp.stats.decode_ms));
      LLMD_RETURN_IF_ERROR(r.Varint32(&finish));
      if (finish > 2) return InvalidArgumentError("unknown finish reason " + std::to_string(finish));
      resp.stats.finish_reason = static_cast<FinishReason>(finish);
      LLMD_RETURN_IF_ERROR(r.F32(&resp.stats.guard_ms));
      LLMD_RETURN_IF_ERROR(ReadAppendedCounters(r, &resp.stats.draft_tokens, &resp.stats.accepted_draft_tokens));
      LLMD_RETURN_IF_ERROR(ReadAppendedCounters(r, &resp.stats.dropped_tokens, &resp.stats.dropped_turns));
      break;
    }
    case 5:
      break;
    case 6: {
      ServerStats& st = resp.server_stats;
      LLMD_RETURN_IF_ERROR(r.Varint32(&st.requests));
      LLMD_RETURN_IF_ERROR(r.Varint32(&st.generated_tokens));
      for (float* f : {&st.ttft_p50_ms, &st.ttft_p95_ms, &st.prefill_tokens_per_second,
                       &st.decode_tokens_per_second, &st.cached_token_ratio}) {
        LLMD_RETURN_IF_ERROR(r.F32(f));
      }
      LLMD_RETURN_IF_ERROR(r.Varint32(&st.active));
      LLMD_RETURN_IF_ERROR(r.Varint32(&st.queued));
      LLMD_RETURN_IF_ERROR(r.Varint32(&st.sessions));
      if (r.done()) break;  // an older llmd: no memory
      LLMD_RETURN_IF_ERROR(r.Option(&st.memory, [&](MemoryStats* m) -> Status {
        for (uint32_t* v : {&m->weights_resident_mib, &m->kv_reserved_mib, &m->kv_resident_mib, &m->compute_mib,
                            &m->checkpoints_mib, &m->process_resident_mib, &m->working_memory_releases}) {
          LLMD_RETURN_IF_ERROR(r.Varint32(v));
        }
        return Status::Ok();
      }));
      LLMD_RETURN_IF_ERROR(ReadAppendedCounters(r, &st.draft_tokens, &st.accepted_draft_tokens));
      LLMD_RETURN_IF_ERROR(ReadClients(r, &st.clients));
      break;
    }
    case 7: {
      uint32_t n;
      LLMD_RETURN_IF_ERROR(r.Varint32(&n));
      if (n > r.remaining()) return InvalidArgumentError("model count " + std::to_string(n) + " exceeds the message");
      resp.models.resize(n);
      for (auto& m : resp.models) LLMD_RETURN_IF_ERROR(r.String(&m));
      break;
    }
    case 8:
      LLMD_RETURN_IF_ERROR(r.String(&resp.pull_status));
      LLMD_RETURN_IF_ERROR(r.Varint64(&resp.pull_completed));
      LLMD_RETURN_IF_ERROR(r.Varint64(&resp.pull_total));
      break;
    default:
      return UnimplementedError("unsupported response variant " + std::to_string(variant));
  }
  LLMD_RETURN_IF_ERROR(Finished(r));
  return resp;
}

}  // namespace llmd::proto
