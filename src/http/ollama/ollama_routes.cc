#include "http/ollama/ollama_routes.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/log.h"
#include "format/gguf_metadata.h"
#include "format/random_access_file.h"
#include "http/exchange.h"
#include "http/json_reply.h"
#include "http/ollama/ollama_sink.h"
#include "http/api_error.h"

namespace llmd::http {
namespace {

using nlohmann::json;

int64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

// The model-management endpoints (ollama_admin.cc): privileged peers only.
bool IsManagement(const std::string& path) {
  return path == "/api/pull" || path == "/api/push" || path == "/api/create" ||
         path == "/api/copy" || path == "/api/delete" || path == "/api/blobs" ||
         path.starts_with("/api/blobs/");
}

int Fail(Responder& out, const ApiError& e) { return SendError(out, e, OllamaErrorBody); }
int Fail(Responder& out, const Status& s) { return Fail(out, ApiErrorOf(s)); }

}  // namespace

OllamaRoutes::OllamaRoutes(sched::ServerState& ctx, const ApiOptions& options)
    : ctx_(ctx), options_(options) {}

int OllamaRoutes::Handle(const Request& req, Responder& out) {
  auto fail = [&](const ApiError& e) { return SendError(out, e, OllamaErrorBody); };
  auto method = [&](const char* want) { return req.method == want; };
  auto wrong_method = [&](const char* allow) { return fail(WrongMethod(req, allow)); };
  const std::string& p = req.path;
  if (p == "/api/chat" || p == "/api/generate") {
    return method("POST") ? Generate(req, out, p == "/api/chat") : wrong_method("POST");
  }
  if (p == "/api/embed" || p == "/api/embeddings") {
    return method("POST") ? Embed(req, out, p == "/api/embeddings") : wrong_method("POST");
  }
  if (p == "/api/show") return method("POST") ? Show(req, out) : wrong_method("POST");
  if (p == "/api/tags" || p == "/api/ps") {
    return method("GET") ? List(out, p == "/api/ps") : wrong_method("GET");
  }
  if (p == "/api/version") {
    if (!method("GET")) return wrong_method("GET");
    return out.Send(200, kJsonType, Dump({{"version", kOllamaVersion}})) ? 200 : 0;
  }
  if (IsManagement(p)) return Manage(req, out);
  return fail(NoSuchEndpoint(req));
}

std::optional<std::string> OllamaRoutes::Resolve(const std::optional<std::string>& name) const {
  const std::vector<sched::AvailableModel> models = ctx_.available();
  if (models.empty()) return std::nullopt;
  if (!name) return models.front().name;
  for (const std::string& want :
       {*name, name->ends_with(":latest") ? name->substr(0, name->size() - 7) : std::string()}) {
    for (const auto& m : models) {
      if (!want.empty() && m.name == want) return m.name;
    }
  }
  return std::nullopt;
}

// Ollama's load and unload requests (no prompt, no input): keep_alive 0 unloads a model that
// may be unloaded (frees the working memory of one that stays), a model that is not loaded
// is loaded, and keep_alive sets how long it stays. An error: the model could not be loaded.
Status OllamaRoutes::LoadOrUnload(const std::string& model, std::optional<int64_t> keep_alive_ms) {
  const bool unload = keep_alive_ms == 0;
  if (unload && ctx_.WorkerFor(model) == nullptr) return Status::Ok();  // nothing to unload
  LLMD_ASSIGN_OR_RETURN(sched::WorkerRef worker,
                        ctx_.Acquire(model, ctx_.config()->request_timeout_ms, keep_alive_ms));
  if (keep_alive_ms) worker->KeepAlive(*keep_alive_ms);
  return Status::Ok();  // the lease ends here: keep_alive runs from now
}

OllamaLimits OllamaRoutes::Limits(const config::DaemonConfig& c) const {
  return OllamaLimits{c.engine.context_tokens};
}

namespace {

// The file's <arch>.context_length; 0 when it does not say.
int32_t TrainedContext(const format::GgufMetadata& facts) {
  const format::GgufValue* v = facts.Find(facts.architecture + ".context_length");
  if (const auto* u = v != nullptr ? std::get_if<uint64_t>(v) : nullptr) {
    return static_cast<int32_t>(std::min<uint64_t>(*u, INT32_MAX));
  }
  return 0;
}

Status UnknownModel(const std::string& name, const sched::ServerState& ctx) {
  return NotFoundError("model '" + name +
                       "' not found: llmd serves the models its config names and those in its models "
                       "directories (available: " + ctx.ModelNames() + "); an admin may pull one (/api/pull)")
      .WithReason(ErrorReason::kUnknownModel);
}

}  // namespace

int OllamaRoutes::Generate(const Request& req, Responder& out, bool chat) {
  const auto config = ctx_.config();
  auto parsed = chat ? ParseOllamaChat(req.body, Limits(*config)) : ParseOllamaGenerate(req.body, Limits(*config));
  if (!parsed.has_value()) return Fail(out, parsed.error());
  OllamaGenerateRequest& r = *parsed;
  const std::optional<std::string> model = Resolve(r.gen.model);
  if (!model) return Fail(out, UnknownModel(r.gen.model.value_or(""), ctx_));
  r.gen.model = *model;
  OllamaReplyContext context{chat, *model, Rfc3339Nanos(std::chrono::system_clock::now())};
  if (r.load_only && !config::IsEmbeddingModel(*config, *model)) {
    // Ollama's load and unload requests.
    if (Status s = LoadOrUnload(*model, r.keep_alive_ms); !s.ok()) return Fail(out, s);
    const bool unload = r.keep_alive_ms == 0;
    return out.Send(200, kJsonType, Dump(OllamaLoadReply(context, unload))) ? 200 : 0;
  }
  r.gen.keep_alive_ms = r.keep_alive_ms;
  OllamaSink sink(out, std::move(context), r.gen.stream);
  return RunExchange(std::move(r.gen), ExchangeOptions{"ollama", "call_"}, sink, ServerEnv(ctx_, req, out));
}

int OllamaRoutes::Embed(const Request& req, Responder& out, bool legacy) {
  const auto started = std::chrono::steady_clock::now();
  const auto config = ctx_.config();
  auto parsed = legacy ? ParseOllamaEmbeddings(req.body, Limits(*config)) : ParseOllamaEmbed(req.body, Limits(*config));
  if (!parsed.has_value()) return Fail(out, parsed.error());
  const std::optional<std::string> model = Resolve(parsed->model);
  if (!model) return Fail(out, UnknownModel(parsed->model.value_or(""), ctx_));
  if (!config::IsEmbeddingModel(*config, *model)) {
    return Fail(out, InvalidArgumentError("model '" + *model +
                                          "' is not loaded for embeddings; name it in embedding_models in the config"));
  }
  auto reply = [&](const std::vector<std::vector<float>>& vectors, int32_t prompt_tokens) {
    const std::string body = legacy ? RenderOllamaEmbeddings(vectors.empty() ? std::vector<float>{} : vectors[0])
                                    : RenderOllamaEmbed(*model, vectors, NanosSince(started), prompt_tokens);
    return out.Send(200, kJsonType, body) ? 200 : 0;
  };
  if (parsed->inputs.empty()) {  // a load request: the model is loaded
    if (Status s = LoadOrUnload(*model, parsed->keep_alive_ms); !s.ok()) return Fail(out, s);
    return reply({}, 0);
  }
  Embedded done = RunEmbeddings({*model, std::move(parsed->inputs), parsed->dimensions, parsed->keep_alive_ms, parsed->num_ctx, parsed->truncate}, "ollama",
                                ServerEnv(ctx_, req, out));
  if (done.client_gone) return 0;
  if (!done.error.ok()) return Fail(out, done.error);
  return reply(done.vectors, done.prompt_tokens);
}

int OllamaRoutes::Show(const Request& req, Responder& out) {
  auto parsed = ParseOllamaShow(req.body);
  if (!parsed.has_value()) return Fail(out, parsed.error());
  const std::optional<std::string> model = Resolve(parsed->model);
  if (!model) return Fail(out, UnknownModel(parsed->model, ctx_));
  const auto config = ctx_.config();
  sched::AvailableModel found;
  found.name = *model;
  for (auto& m : ctx_.available()) {
    if (m.name == *model) found = std::move(m);
  }
  return out.Send(200, kJsonType, RenderOllamaShow(Describe(found, *config), *config)) ? 200 : 0;
}

// tags: every model that can be served, loaded or not; ps: the loaded ones, with when each
// unloads if it stays idle.
int OllamaRoutes::List(Responder& out, bool running) {
  const auto config = ctx_.config();
  const auto now = std::chrono::system_clock::now();
  json models = json::array();
  for (const auto& available : ctx_.available()) {
    if (running && !available.loaded) continue;
    OllamaModel m = Describe(available, *config);
    if (available.expires_in_ms >= 0) m.expires_at = Rfc3339Nanos(now + std::chrono::milliseconds(available.expires_in_ms));
    models.push_back(running ? OllamaPsEntry(m) : OllamaTagsEntry(m));
  }
  return out.Send(200, kJsonType, Dump({{"models", std::move(models)}})) ? 200 : 0;
}

OllamaModel OllamaRoutes::Describe(const sched::AvailableModel& available, const config::DaemonConfig& c) {
  const std::string& name = available.name;
  OllamaModel m;
  m.name = name;
  m.embeddings = available.embedding || config::IsEmbeddingModel(c, name);
  // Not loaded: the context it would load with (the registry sizes it from the file), else
  // the config's; loaded: the worker's, below.
  m.context_length = available.context_tokens > 0 ? available.context_tokens : c.engine.context_tokens;
  // The file: the registry's (model_path, `models`, or the models directories).
  std::string path = available.path;
  if (path.empty() && name == config::DefaultModelName(c)) path = c.engine.model_path;
  for (const auto& [n, p] : c.extra_models) {
    if (path.empty() && n == name) path = p;
  }
  struct stat st {};
  int64_t mtime_ns = options_.started_unix * 1000000000;
  if (!path.empty() && ::stat(path.c_str(), &st) == 0) {
    m.file_bytes = static_cast<uint64_t>(st.st_size);
    mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  m.modified_at = Rfc3339Nanos(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(mtime_ns))));
  if (!path.empty()) {
    std::lock_guard<std::mutex> lock(facts_mu_);
    CachedFacts& cached = facts_[path];
    if (!cached.facts || cached.bytes != m.file_bytes || cached.mtime_ns != mtime_ns) {
      auto file = format::OpenRandomAccessFile(path);
      auto facts = file.has_value() ? format::ReadGgufMetadata(**file)
                                    : Result<format::GgufMetadata>(file.error());
      if (!facts.has_value()) {
        Log(LogLevel::kWarn, "ollama_model_facts",
            {{"model", name}, {"error", facts.error().ToString()}});
      }
      cached = {m.file_bytes, mtime_ns,
                std::make_shared<const format::GgufMetadata>(
                    facts.has_value() ? std::move(*facts) : format::GgufMetadata{})};
    }
    m.facts = *cached.facts;
  }
  if (m.context_length == 0) m.context_length = TrainedContext(m.facts);  // nothing better known
  // A manifest's TEMPLATE is the template the model renders with (show's template, capabilities).
  if (const config::ModelGenerationDefaults* d = config::FindModelDefaults(c, name); d != nullptr && d->chat_template) {
    m.facts.chat_template = *d->chat_template;
  }
  // What the loaded model holds, and where.
  if (const sched::WorkerRef worker = ctx_.WorkerFor(name)) {
    char digest[24];
    std::snprintf(digest, sizeof digest, "%016llx",
                  static_cast<unsigned long long>(worker->health().model_fingerprint));
    m.digest = digest;
    m.context_length = worker->health().context_tokens;
    for (const auto& d : worker->placement()) {
      const uint64_t bytes = d.model_bytes + d.context_bytes + d.compute_bytes;
      m.memory_bytes += bytes;
      if (d.device != "CPU") m.vram_bytes += bytes;
    }
  }
  if (m.memory_bytes == 0) m.memory_bytes = m.file_bytes;
  return m;
}

}  // namespace llmd::http
