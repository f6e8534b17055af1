#include "daemon/model_manager.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/log.h"
#include "fetch/pull_plan.h"
#include "fetch/pull_source.h"
#include "fetch/sha256.h"
#include "format/gguf_precheck.h"
#include "format/random_access_file.h"
#include "models/chat_template_syntax.h"
#include "models/model_name.h"
#include "models/modelfile.h"

namespace llmd::daemon {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string RealPathOr(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The file part of "ns/model:tag.ext".
std::string BaseName(const std::string& file) {
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

Status PrecheckFile(const std::string& path) {
  LLMD_ASSIGN_OR_RETURN(auto file, format::OpenRandomAccessFile(path));
  return format::PrecheckGguf(*file).error();
}

// Creates `dir` when missing; refuses anything there but a real folder (a symlink could lead
// out of the models directory).
Status EnsureRealFolder(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return InternalError(Errno("cannot create " + dir));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return InternalError(Errno("cannot stat " + dir));
  if (S_ISLNK(st.st_mode)) {
    return InvalidArgumentError("'" + dir + "' is a symlink: llmd writes models only inside models_dir, never through a link");
  }
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("'" + dir + "' is not a folder");
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return InternalError(Errno("cannot open " + dir));
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : InternalError(Errno("cannot sync " + dir));
}

// Writes `bytes` to `<folder>/.<file>.tmp`, syncs it, and links it to `<folder>/<file>`, which
// must not exist (link refuses to replace: two writers cannot both win one name).
Status WriteNewFile(const std::string& folder, const std::string& file, std::string_view bytes) {
  const std::string tmp = folder + "/." + file + ".tmp";
  const std::string final_path = folder + "/" + file;
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError(Errno("cannot create " + tmp));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = InternalError(Errno("cannot write " + tmp));
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) {
    ::unlink(tmp.c_str());
    return InternalError(Errno("cannot sync " + tmp));
  }
  const int rc = ::link(tmp.c_str(), final_path.c_str());
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (rc != 0) {
    errno = link_errno;
    if (errno == EEXIST) return InvalidArgumentError("'" + final_path + "' already exists");
    return InternalError(Errno("cannot put " + final_path + " in place"));
  }
  return SyncDir(folder);
}

Status CopyInto(const std::string& src, const std::string& tmp) {
  const int in = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return InternalError(Errno("cannot open " + src));
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (out < 0) {
    ::close(in);
    return InternalError(Errno("cannot create " + tmp));
  }
  std::string buf(1 << 20, '\0');
  Status s;
  while (s.ok()) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) s = InternalError(Errno("cannot read " + src));
    if (n <= 0) break;
    for (ssize_t off = 0; off < n && s.ok();) {
      const ssize_t w = ::write(out, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) s = InternalError(Errno("cannot write " + tmp));
      else off += w;
    }
  }
  if (s.ok() && ::fsync(out) != 0) s = InternalError(Errno("cannot sync " + tmp));
  ::close(in);
  ::close(out);
  return s;
}

// Turns text such as "sha256:ab.." (or Ollama's "sha256-ab..") into the 64 hex digits.
Result<std::string> BlobHex(std::string_view digest) {
  if (!digest.starts_with("sha256:") && !digest.starts_with("sha256-")) {
    return InvalidArgumentError("blob digest '" + std::string(digest) + "' must be sha256:<64 hex digits>");
  }
  const std::string_view hex = digest.substr(7);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
    return InvalidArgumentError("blob digest '" + std::string(digest) + "' must be sha256:<64 lowercase hex digits>");
  }
  return std::string(hex);
}

std::vector<std::string> ConfiguredNames(const config::DaemonConfig& c) {
  std::vector<std::string> names;
  if (!c.engine.model_path.empty()) names.push_back(config::DefaultModelName(c));
  for (const auto& [name, path] : c.extra_models) names.push_back(name);
  return names;
}

std::vector<std::string> ConfiguredPaths(const config::DaemonConfig& c) {
  std::vector<std::string> paths;
  if (!c.engine.model_path.empty()) paths.push_back(RealPathOr(c.engine.model_path));
  for (const auto& [name, path] : c.extra_models) paths.push_back(RealPathOr(path));
  return paths;
}

fetch::DownloadOptions PullOptions(const config::DaemonConfig& c) {
  fetch::DownloadOptions o;
  o.max_bytes = c.pull_max_mb << 20;
  o.precheck = PrecheckFile;  // a GGUF that llama.cpp would choke on never enters models_dir
  return o;
}

}  // namespace

ModelManager::ModelManager(const config::DaemonConfig& config, models::Catalog& catalog, ModelRegistry& registry,
                           std::function<void()> rescan, const std::atomic<bool>* stopping)
    : models_dir_(config.models_dir),
      configured_names_(ConfiguredNames(config)),
      configured_paths_(ConfiguredPaths(config)),
      hub_([&] {
        fetch::HubOptions h;
        h.base_url = config.hub_url;
        return h;
      }()),
      catalog_(catalog),
      registry_(registry),
      rescan_(std::move(rescan)),
      stopping_(stopping),
      pulls_(PullOptions(config)) {}

bool ModelManager::Configured(const std::string& name) const {
  for (const std::string& n : configured_names_) {
    if (n == name || n + ":latest" == name) return true;
  }
  return false;
}

Result<std::string> ModelManager::FolderFor(const models::ModelName& name) {
  LLMD_RETURN_IF_ERROR(EnsureRealFolder(models_dir_));
  if (name.name_space.empty()) return models_dir_;
  const std::string folder = models_dir_ + "/" + name.name_space;
  LLMD_RETURN_IF_ERROR(EnsureRealFolder(folder));
  return folder;
}

Status ModelManager::CheckFree(const models::ModelName& name, const models::CatalogScan& scan) const {
  const std::string text = name.ToString();
  if (Configured(text)) {
    return InvalidArgumentError("model '" + text + "' is a model of the config (model_path or models); choose another name");
  }
  const models::CatalogEntry* e = scan.Find(text);
  if (e != nullptr && e->directory == models_dir_) {
    return InvalidArgumentError("model '" + text + "' already exists in models_dir; delete it first");
  }
  for (const char* ext : {".gguf", ".modelfile"}) {
    struct stat st {};
    const std::string path = models_dir_ + "/" + name.FileName(ext);
    if (::lstat(path.c_str(), &st) == 0) {
      return InvalidArgumentError("'" + path + "' already exists in models_dir; delete model '" + text + "' first");
    }
  }
  return Status::Ok();
}

Result<models::CatalogEntry> ModelManager::Usable(std::string_view name, const models::CatalogScan& scan) const {
  LLMD_ASSIGN_OR_RETURN(std::string canonical, models::CanonicalModelName(name));
  const models::CatalogEntry* e = scan.Find(canonical);
  if (e == nullptr) {
    const std::string why = Configured(canonical) ? " (it is a model of the config, not of a models directory)" : "";
    return NotFoundError("model '" + canonical + "' is not in the models directories" + why)
        .WithReason(ErrorReason::kUnknownModel);
  }
  if (!e->usable()) return InvalidArgumentError("model '" + canonical + "' cannot be used: " + e->error.message());
  return *e;
}

Status ModelManager::PlaceFile(const std::string& src, const std::string& folder, const std::string& file) {
  const std::string final_path = folder + "/" + file;
  if (::link(src.c_str(), final_path.c_str()) == 0) return SyncDir(folder);  // same file system: shares the bytes
  if (errno == EEXIST) return InvalidArgumentError("'" + final_path + "' already exists");
  const std::string tmp = folder + "/." + file + ".tmp";
  ::unlink(tmp.c_str());
  Status s = CopyInto(src, tmp);
  if (s.ok() && ::link(tmp.c_str(), final_path.c_str()) != 0) {
    s = errno == EEXIST ? InvalidArgumentError("'" + final_path + "' already exists")
                        : InternalError(Errno("cannot put " + final_path + " in place"));
  }
  ::unlink(tmp.c_str());
  LLMD_RETURN_IF_ERROR(s);
  return SyncDir(folder);
}

Status ModelManager::WriteManifest(const std::string& folder, const std::string& file, const models::Manifest& manifest) {
  LLMD_ASSIGN_OR_RETURN(std::string text, models::RenderModelfile(manifest));
  return WriteNewFile(folder, file, text);
}

Result<std::string> ModelManager::BlobPath(std::string_view digest) const {
  LLMD_ASSIGN_OR_RETURN(std::string hex, BlobHex(digest));
  return models_dir_ + "/.blobs/sha256-" + hex;
}

Result<bool> ModelManager::HasBlob(std::string_view digest) {
  LLMD_ASSIGN_OR_RETURN(std::string path, BlobPath(digest));
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status ModelManager::PutBlob(std::string_view digest, std::string_view bytes) {
  LLMD_ASSIGN_OR_RETURN(std::string hex, BlobHex(digest));
  const std::string got = fetch::Sha256Hex(bytes);
  if (got != hex) {
    return InvalidArgumentError("blob body has sha256:" + got + ", not the sha256:" + hex + " its path names");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto has = HasBlob(digest); has.has_value() && *has) return Status::Ok();  // the same bytes are there
  LLMD_RETURN_IF_ERROR(EnsureRealFolder(models_dir_));
  const std::string blobs = models_dir_ + "/.blobs";
  LLMD_RETURN_IF_ERROR(EnsureRealFolder(blobs));
  return WriteNewFile(blobs, "sha256-" + hex, bytes);
}

Result<sched::PulledModel> ModelManager::Pull(std::string_view source, const sched::PullProgressFn& progress,
                                              const std::atomic<bool>* cancel) {
  if (progress && !progress(sched::PullProgress{})) return CancelledError("pull cancelled");
  if (auto parsed = fetch::ParsePullSource(source); !parsed.has_value()) {
    return InvalidArgumentError(parsed.error().message() +
                                " (llmd does not pull from Ollama's registry: give the GGUF's https URL, or its "
                                "Hugging Face repository as hf.co/owner/repo:Q4_K_M)");
  }
  LLMD_RETURN_IF_ERROR(EnsureRealFolder(models_dir_));
  LLMD_ASSIGN_OR_RETURN(fetch::DownloadRequest request,
                        fetch::PlanPull(source, fetch::PullTarget{models_dir_, "", ""}, hub_));
  const std::string ext(models::kGgufExtension);
  if (!request.file_name.ends_with(ext)) {
    return InvalidArgumentError("cannot pull '" + std::string(source) + "': '" + request.file_name +
                                "' is not a GGUF file (.gguf)");
  }
  const std::string stem = request.file_name.substr(0, request.file_name.size() - ext.size());
  auto name = models::ParseModelName(stem);
  if (!name.has_value()) {
    return InvalidArgumentError("cannot pull '" + std::string(source) + "': its file name does not make a model name: " +
                                name.error().message());
  }
  if (Configured(name->ToString())) {
    return InvalidArgumentError("cannot pull '" + std::string(source) + "': '" + name->ToString() +
                                "' is a model of the config (model_path or models)");
  }
  const fetch::ProgressFn on_bytes = [&](const fetch::Progress& p) {
    if (stopping_ != nullptr && stopping_->load()) return false;  // shutdown: the partial file stays
    if (!progress) return true;
    sched::PullProgress out;
    out.phase = sched::PullProgress::Phase::kDownloading;
    out.file_name = request.file_name;
    out.sha256 = request.sha256;
    out.done_bytes = p.done_bytes;
    out.total_bytes = p.total_bytes >= 0 ? p.total_bytes : request.expected_bytes;
    out.bytes_per_second = p.bytes_per_second;
    return progress(out);
  };
  Log(LogLevel::kInfo, "model_pull", {{"source", std::string(source)}, {"file", request.file_name}});
  LLMD_ASSIGN_OR_RETURN(fetch::DownloadResult done, pulls_.Pull(request, on_bytes, cancel != nullptr ? cancel : stopping_));
  rescan_();
  const std::string model = name->ToString();
  const models::CatalogScan scan = catalog_.Scan();
  const models::CatalogEntry* e = scan.Find(model);
  if (e == nullptr || e->directory != models_dir_) {
    return InternalError("pulled " + done.path + " but the catalog does not list model '" + model +
                         "' from models_dir (a manifest of that name?)");
  }
  if (!e->usable()) return InvalidArgumentError("pulled model '" + model + "' cannot be served: " + e->error.message());
  Log(LogLevel::kInfo, "model_pulled", {{"model", model}, {"bytes", std::to_string(done.bytes)}, {"sha256", done.sha256}});
  return sched::PulledModel{model, done.path, done.bytes, done.sha256, done.already_present};
}

Status ModelManager::Create(const sched::CreateModelRequest& r) {
  LLMD_ASSIGN_OR_RETURN(models::ModelName name, models::ParseModelName(r.name));
  models::Manifest manifest;
  manifest.defaults.system = r.system;
  if (r.chat_template) LLMD_RETURN_IF_ERROR(models::CheckChatTemplate(*r.chat_template).WithContext("create"));
  manifest.defaults.chat_template = r.chat_template;
  for (const auto& [key, value] : r.parameters) {
    LLMD_RETURN_IF_ERROR(manifest.defaults.parameters.Add(key, value));
  }
  const bool has_defaults = r.system || r.chat_template || !r.parameters.empty();
  if (r.from && !r.files.empty()) {
    return InvalidArgumentError("create: give 'from' (a model) or 'files' (an uploaded GGUF), not both");
  }
  if (!r.from && r.files.empty()) {
    return InvalidArgumentError("create: 'from' (a model) or 'files' (an uploaded GGUF) is required");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const models::CatalogScan scan = catalog_.Scan();
  LLMD_RETURN_IF_ERROR(CheckFree(name, scan));
  const std::string base = BaseName(name.FileName(""));
  std::vector<std::string> written;
  Status s;
  if (!r.files.empty()) {
    if (r.files.size() != 1) {
      return InvalidArgumentError("create: 'files' must hold one GGUF (the weights); it has " +
                                  std::to_string(r.files.size()));
    }
    const auto& [file, digest] = r.files.front();
    if (!file.ends_with(models::kGgufExtension)) {
      return InvalidArgumentError("create: files['" + file + "'] is not a GGUF (.gguf)");
    }
    LLMD_ASSIGN_OR_RETURN(std::string blob, BlobPath(digest));
    if (auto has = HasBlob(digest); !has.has_value() || !*has) {
      return NotFoundError("create: blob " + digest + " was not uploaded (POST /api/blobs/" + digest + " first)");
    }
    LLMD_RETURN_IF_ERROR(PrecheckFile(blob));
    LLMD_ASSIGN_OR_RETURN(std::string folder, FolderFor(name));
    const std::string gguf = base + std::string(models::kGgufExtension);
    s = PlaceFile(blob, folder, gguf);
    if (s.ok()) written.push_back(folder + "/" + gguf);
    if (s.ok() && has_defaults) {
      manifest.from = gguf;
      s = WriteManifest(folder, base + std::string(models::kModelfileExtension), manifest);
      if (s.ok()) written.push_back(folder + "/" + base + std::string(models::kModelfileExtension));
    }
  } else {
    LLMD_ASSIGN_OR_RETURN(models::CatalogEntry from, Usable(*r.from, scan));
    if (from.name == name.ToString()) return InvalidArgumentError("create: model '" + from.name + "' cannot be made from itself");
    manifest.from = from.name;
    LLMD_ASSIGN_OR_RETURN(std::string folder, FolderFor(name));
    s = WriteManifest(folder, base + std::string(models::kModelfileExtension), manifest);
    if (s.ok()) written.push_back(folder + "/" + base + std::string(models::kModelfileExtension));
  }
  if (s.ok()) {
    rescan_();
    const models::CatalogScan after = catalog_.Scan();
    const models::CatalogEntry* e = after.Find(name.ToString());
    if (e == nullptr) s = InternalError("created model '" + name.ToString() + "' is not listed");
    else if (!e->usable()) s = InvalidArgumentError("model '" + name.ToString() + "' cannot be served: " + e->error.message());
  }
  if (!s.ok()) {  // leave nothing half made
    for (const std::string& path : written) ::unlink(path.c_str());
    if (!written.empty()) rescan_();
    return s;
  }
  Log(LogLevel::kInfo, "model_created", {{"model", name.ToString()}});
  return Status::Ok();
}

Status ModelManager::Copy(std::string_view source, std::string_view destination) {
  LLMD_ASSIGN_OR_RETURN(models::ModelName name, models::ParseModelName(destination));
  std::lock_guard<std::mutex> lock(mu_);
  const models::CatalogScan scan = catalog_.Scan();
  LLMD_ASSIGN_OR_RETURN(models::CatalogEntry from, Usable(source, scan));
  LLMD_RETURN_IF_ERROR(CheckFree(name, scan));
  LLMD_ASSIGN_OR_RETURN(std::string folder, FolderFor(name));
  const std::string base = BaseName(name.FileName(""));
  const std::string gguf = base + std::string(models::kGgufExtension);
  // The copy stands alone: its own link to the weights (deleting the source keeps it), and,
  // for a model with a manifest, its defaults as resolved (its bases' included).
  LLMD_RETURN_IF_ERROR(PlaceFile(from.gguf_path, folder, gguf));
  if (from.from) {
    models::Manifest manifest{gguf, from.defaults};
    if (Status s = WriteManifest(folder, base + std::string(models::kModelfileExtension), manifest); !s.ok()) {
      ::unlink((folder + "/" + gguf).c_str());
      return s;
    }
  }
  rescan_();
  Log(LogLevel::kInfo, "model_copied", {{"source", from.name}, {"model", name.ToString()}});
  return Status::Ok();
}

Status ModelManager::Delete(std::string_view text) {
  LLMD_ASSIGN_OR_RETURN(models::ModelName name, models::ParseModelName(text));
  std::lock_guard<std::mutex> lock(mu_);
  const models::CatalogScan scan = catalog_.Scan();
  const std::string canonical = name.ToString();
  const models::CatalogEntry* e = scan.Find(canonical);
  if (Configured(canonical) || (e != nullptr && [&] {
        for (const std::string& p : configured_paths_) {
          if (p == e->gguf_path) return true;
        }
        return false;
      }())) {
    return InvalidArgumentError("model '" + canonical +
                                "' is a model of the config (model_path or models): remove it from the config instead");
  }
  if (e == nullptr) {
    return NotFoundError("model '" + canonical + "' not found in models_dir").WithReason(ErrorReason::kUnknownModel);
  }
  if (e->directory != models_dir_) {
    return InvalidArgumentError("model '" + canonical + "' is in the read-only directory " + e->directory +
                                " (system_models_dirs); llmd deletes only from models_dir");
  }
  if (registry_.InUse(canonical)) {
    return UnavailableError("model '" + canonical +
                            "' is serving requests or loading; delete it once they end (it is not deleted)");
  }
  // The model's files: its manifest and its GGUF, both named after it ("x" is x.modelfile and
  // x.gguf, as found: e.g. "x:latest.gguf").
  const std::string& found = e->source_path;
  const std::string stem = found.substr(0, found.rfind('.'));
  int removed = 0;
  for (std::string_view ext : {models::kModelfileExtension, models::kGgufExtension}) {
    const std::string path = stem + std::string(ext);
    if (::unlink(path.c_str()) == 0) ++removed;  // a symlink is removed itself, never what it names
    else if (errno != ENOENT) return InternalError(Errno("cannot delete " + path));
  }
  if (removed == 0) return NotFoundError("model '" + canonical + "' has no file in models_dir");
  rescan_();
  Log(LogLevel::kInfo, "model_deleted", {{"model", canonical}});
  return Status::Ok();
}

}  // namespace llmd::daemon
