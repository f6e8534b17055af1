// Ollama's model management endpoints (/api/pull, /api/create, /api/copy, /api/delete,
// /api/blobs), for privileged peers only: root, or a UID/GID in admin_uids/admin_gids
// (config::IsModelAdmin). The work is the daemon's (sched::ModelAdmin); this file parses
// Ollama's bodies and writes Ollama's replies and progress lines.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "http/json_fields.h"
#include "http/json_reply.h"
#include "http/ollama/ollama_routes.h"
#include "sched/model_admin.h"

namespace llmd::http {
namespace {

using nlohmann::json;

int Fail(Responder& out, const ApiError& e) { return SendError(out, e, OllamaErrorBody); }
int Fail(Responder& out, const Status& s) { return Fail(out, ApiErrorOf(s)); }

// Ollama's clients send the model as `model`, older ones (ollama-js's pull and delete) as
// `name`.
Result<std::string> ModelField(const json& body, const char* where) {
  if (Field(body, "model") != nullptr) return RequiredString(body, "model", where);
  if (Field(body, "name") != nullptr) return RequiredString(body, "name", where);
  return InvalidArgumentError(std::string(where) + "'model' is required");
}

// Ollama's create fields that llmd does not carry out: refused by name, never ignored.
Status RefuseUnsupported(const json& body) {
  for (const char* key : {"quantize", "adapters", "messages", "license", "modelfile", "path"}) {
    const json* v = Field(body, key);
    if (v == nullptr || (v->is_array() && v->empty()) || (v->is_object() && v->empty())) continue;
    return InvalidArgumentError(std::string("create: '") + key +
                                "' is not supported by llmd (from, files, system, template and parameters are)");
  }
  return Status::Ok();
}

// A PARAMETER value as a Modelfile writes it.
Result<std::string> ParameterText(const std::string& key, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_float()) return v.dump();
  return TypeError("parameters." + key, "a number or a string");
}

Result<sched::CreateModelRequest> ParseCreate(const json& body) {
  sched::CreateModelRequest r;
  LLMD_ASSIGN_OR_RETURN(r.name, ModelField(body, "create: "));
  LLMD_RETURN_IF_ERROR(RefuseUnsupported(body));
  LLMD_ASSIGN_OR_RETURN(r.from, OptionalString(body, "from", "from"));
  LLMD_ASSIGN_OR_RETURN(r.system, OptionalString(body, "system", "system"));
  LLMD_ASSIGN_OR_RETURN(r.chat_template, OptionalString(body, "template", "template"));
  if (const json* params = Field(body, "parameters")) {
    if (!params->is_object()) return TypeError("parameters", "an object");
    for (const auto& [key, value] : params->items()) {
      if (value.is_array()) {
        for (const json& item : value) {
          LLMD_ASSIGN_OR_RETURN(std::string text, ParameterText(key, item));
          r.parameters.emplace_back(key, std::move(text));
        }
        continue;
      }
      LLMD_ASSIGN_OR_RETURN(std::string text, ParameterText(key, value));
      r.parameters.emplace_back(key, std::move(text));
    }
  }
  if (const json* files = Field(body, "files")) {
    if (!files->is_object()) return TypeError("files", "an object of file name to \"sha256:<hex>\"");
    for (const auto& [file, digest] : files->items()) {
      if (!digest.is_string()) return TypeError("files." + file, "a string (\"sha256:<hex>\")");
      r.files.emplace_back(file, digest.get<std::string>());
    }
  }
  return r;
}

// Writes NDJSON progress lines, or keeps the last one for a non-streamed reply. The first
// line is held until a second one comes, so an error found before any work (a bad source, a
// refused name) still gets its HTTP status rather than a 200 stream ending in an error line.
class ProgressLines {
 public:
  ProgressLines(Responder& out, bool stream) : out_(out), stream_(stream) {}
  // False once the client is gone.
  bool Write(json line) {
    if (!stream_) {
      last_ = std::move(line);
      return true;
    }
    if (!held_) {
      held_ = true;
      last_ = std::move(line);
      return true;
    }
    if (!begun_) {
      begun_ = true;
      ok_ = out_.BeginStream(200, "application/x-ndjson") && out_.WriteChunk(Dump(last_) + "\n");
    }
    ok_ = ok_ && out_.WriteChunk(Dump(line) + "\n");
    return ok_;
  }
  int Finish() {
    if (!stream_ || !begun_) return out_.Send(200, stream_ ? "application/x-ndjson" : kJsonType, Dump(last_) + (stream_ ? "\n" : "")) ? 200 : 0;
    return out_.EndStream() && ok_ ? 200 : 0;
  }
  int Error(const Status& s) {
    if (!begun_) return Fail(out_, s);
    if (!Write({{"error", s.message()}}) || !out_.EndStream()) return 0;
    return 200;
  }

 private:
  Responder& out_;
  const bool stream_;
  bool held_ = false;
  bool begun_ = false;
  bool ok_ = true;
  json last_;
};

json PullLine(const sched::PullProgress& p) {
  if (p.phase == sched::PullProgress::Phase::kResolving) return {{"status", "pulling manifest"}};
  // Ollama names a layer by its digest's first 12 hex digits; a plain URL has no digest yet.
  json line = {{"status", "pulling " + (p.sha256.empty() ? p.file_name : p.sha256.substr(0, 12))}};
  if (!p.sha256.empty()) line["digest"] = "sha256:" + p.sha256;
  if (p.total_bytes >= 0) line["total"] = p.total_bytes;
  line["completed"] = p.done_bytes;
  return line;
}

// HEAD or POST /api/blobs/sha256:<hex>: is it there; upload it (checked against its digest).
int Blobs(const Request& req, Responder& out, sched::ModelAdmin& admin) {
  const std::string digest = req.path.substr(std::string("/api/blobs/").size());
  if (req.method == "HEAD") {
    auto has = admin.HasBlob(digest);
    if (!has.has_value()) return Fail(out, has.error());
    return out.Send(*has ? 200 : 404, kJsonType, "") ? (*has ? 200 : 404) : 0;
  }
  if (req.method != "POST") return Fail(out, WrongMethod(req, "HEAD, POST"));
  if (Status s = admin.PutBlob(digest, req.body); !s.ok()) return Fail(out, s);
  return out.Send(201, kJsonType, "") ? 201 : 0;
}

int Delete(const Request& req, Responder& out, sched::ModelAdmin& admin) {
  if (req.method != "DELETE") return Fail(out, WrongMethod(req, "DELETE"));
  auto body = ParseObject(req.body);
  if (!body.has_value()) return Fail(out, body.error());
  auto model = ModelField(*body, "delete: ");
  if (!model.has_value()) return Fail(out, model.error());
  if (Status s = admin.Delete(*model); !s.ok()) return Fail(out, s);
  return out.Send(200, kJsonType, "") ? 200 : 0;
}

int Copy(const json& body, Responder& out, sched::ModelAdmin& admin) {
  auto source = RequiredString(body, "source", "copy: ");
  if (!source.has_value()) return Fail(out, source.error());
  auto destination = RequiredString(body, "destination", "copy: ");
  if (!destination.has_value()) return Fail(out, destination.error());
  if (Status s = admin.Copy(*source, *destination); !s.ok()) return Fail(out, s);
  return out.Send(200, kJsonType, "") ? 200 : 0;
}

int Create(const json& body, Responder& out, ProgressLines& lines, sched::ModelAdmin& admin) {
  auto request = ParseCreate(body);
  if (!request.has_value()) return Fail(out, request.error());
  if (!lines.Write({{"status", "gathering model components"}})) return 0;
  if (Status s = admin.Create(*request); !s.ok()) return lines.Error(s);
  if (!lines.Write({{"status", "writing manifest"}}) || !lines.Write({{"status", "success"}})) return 0;
  return lines.Finish();
}

int Pull(const json& body, Responder& out, ProgressLines& lines, sched::ModelAdmin& admin) {
  auto source = ModelField(body, "pull: ");
  if (!source.has_value()) return Fail(out, source.error());
  bool insecure = false;
  if (Status s = ReadBool(body, "insecure", &insecure); !s.ok()) return Fail(out, s);
  if (insecure) {
    return Fail(out, InvalidArgumentError("pull: 'insecure' is not supported: llmd fetches over https only "
                                          "(plain http from loopback hosts)"));
  }
  auto pulled = admin.Pull(*source, [&](const sched::PullProgress& progress) { return lines.Write(PullLine(progress)); },
                           nullptr);
  if (!pulled.has_value()) return lines.Error(pulled.error());
  if (!lines.Write({{"status", "verifying sha256 digest"}}) || !lines.Write({{"status", "writing manifest"}}) ||
      !lines.Write({{"status", "success"}})) {
    return 0;
  }
  return lines.Finish();
}

}  // namespace

int OllamaRoutes::Manage(const Request& req, Responder& out) {
  const std::string& p = req.path;
  if (p == "/api/push") {
    return Fail(out, ApiError{501, "server_error", "unsupported",
                              "/api/push is not supported: llmd does not publish models to a registry", {}});
  }
  const auto config = ctx_.config();
  const std::optional<uint32_t> uid = req.peer.identified ? std::optional<uint32_t>(req.peer.uid) : std::nullopt;
  const std::optional<uint32_t> gid =
      req.peer.identified && req.peer.gid != kNoGid ? std::optional<uint32_t>(req.peer.gid) : std::nullopt;
  if (!config::IsModelAdmin(*config, uid, gid)) {
    const std::string who = uid ? "uid " + std::to_string(*uid) : "a peer of no known uid";
    return Fail(out, ApiError{403, "permission_error", "not_model_admin",
                              p + ": " + config::kModelAdminRule + "; this request comes from " + who, {}});
  }
  sched::ModelAdmin* admin = ctx_.model_admin();
  if (admin == nullptr) {
    return Fail(out, ApiError{501, "server_error", "unsupported",
                              p + ": model management needs models_dir (the writable models directory) in the config",
                              {}});
  }
  if (p.starts_with("/api/blobs/")) return Blobs(req, out, *admin);
  if (p == "/api/blobs") return Fail(out, NoSuchEndpoint(req));
  if (p == "/api/delete") return Delete(req, out, *admin);
  if (req.method != "POST") return Fail(out, WrongMethod(req, "POST"));
  auto body = ParseObject(req.body);
  if (!body.has_value()) return Fail(out, body.error());
  bool stream = true;  // Ollama streams progress unless told not to
  if (Status s = ReadBool(*body, "stream", &stream); !s.ok()) return Fail(out, s);
  if (p == "/api/copy") return Copy(*body, out, *admin);
  ProgressLines lines(out, stream);
  if (p == "/api/create") return Create(*body, out, lines, *admin);
  return Pull(*body, out, lines, *admin);  // /api/pull
}

}  // namespace llmd::http
