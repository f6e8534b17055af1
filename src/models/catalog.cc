#include "models/catalog.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "models/model_dir.h"
#include "models/model_name.h"

namespace llmd::models {
namespace {

using SystemTime = std::chrono::system_clock::time_point;

SystemTime TimeOf(const FileStamp& stamp) {
  return SystemTime(std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::nanoseconds(stamp.mtime_ns)));
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The file that holds a name in the first directory that has it.
struct Candidate {
  DirFile file;
  const ModelDirectory* directory = nullptr;
  std::string real_root;
  Status name_error;  // the stem is not a valid model name
};

// Adds one directory's models to `out`, where a name already taken by an earlier directory
// stays as it is. Within the directory a manifest beats a GGUF of the same name.
void AddCandidates(const ModelDirectory& dir, DirListing listing,
                   std::map<std::string, Candidate>* out) {
  std::map<std::string, Candidate> local;
  for (DirFile& file : listing.files) {
    Candidate c;
    std::string name;
    if (auto canonical = CanonicalModelName(file.stem); canonical.has_value()) {
      name = std::move(*canonical);
    } else {
      name = file.stem;
      c.name_error = InvalidArgumentError(
          file.path + ": the file name is not a model name: " + canonical.error().message());
    }
    auto it = local.find(name);
    const bool replaces = it != local.end() && it->second.file.kind == DirFile::Kind::kGguf &&
                          file.kind == DirFile::Kind::kModelfile;
    if (it != local.end() && !replaces) continue;
    c.file = std::move(file);
    c.directory = &dir;
    c.real_root = listing.real_root;
    local.insert_or_assign(name, std::move(c));
  }
  for (auto& [name, c] : local) out->try_emplace(name, std::move(c));
}

// Turns candidates into entries, following FROM from model to model (memoized, with the
// chain in progress kept to refuse cycles).
class Resolver {
 public:
  Resolver(const std::map<std::string, Candidate>& candidates, ScanCache* cache,
           std::set<std::string>* read)
      : candidates_(candidates), cache_(cache), read_(read) {}

  const CatalogEntry& Resolve(const std::string& name, int depth);

 private:
  // Fills the weights' facts from a GGUF; returns whether it pools (an embedding model).
  bool FromGguf(const ResolvedFile& file, CatalogEntry* entry);
  bool FromManifest(const Candidate& c, int depth, CatalogEntry* entry);
  bool FromModel(const ModelName& base_name, const Manifest& manifest, int depth,
                 CatalogEntry* entry);

  const std::map<std::string, Candidate>& candidates_;
  ScanCache* cache_;
  std::set<std::string>* read_;  // every file the scan used, for ScanCache::KeepOnly
  std::map<std::string, CatalogEntry> done_;
  std::set<std::string> resolving_;
};

const CatalogEntry& Resolver::Resolve(const std::string& name, int depth) {
  if (auto it = done_.find(name); it != done_.end()) return it->second;
  const Candidate& c = candidates_.at(name);
  CatalogEntry entry;
  entry.name = name;
  entry.directory = c.directory->path;
  entry.read_only = c.directory->read_only;
  entry.source_path = c.file.path;
  entry.modified = TimeOf(c.file.resolved.stamp);
  bool pools = false;
  resolving_.insert(name);
  if (!c.name_error.ok()) {
    entry.error = c.name_error;
  } else if (!c.file.resolved.error.ok()) {
    entry.error = c.file.resolved.error;
  } else if (c.file.kind == DirFile::Kind::kGguf) {
    pools = FromGguf(c.file.resolved, &entry);
  } else {
    pools = FromManifest(c, depth, &entry);
  }
  resolving_.erase(name);
  entry.embedding = entry.defaults.embedding.value_or(pools);
  return done_.insert_or_assign(name, std::move(entry)).first->second;
}

bool Resolver::FromGguf(const ResolvedFile& file, CatalogEntry* entry) {
  read_->insert(file.real_path);
  auto facts = cache_->Gguf(file.real_path, file.stamp);
  if (!facts.has_value()) {
    entry->error = facts.error();
    return false;
  }
  entry->gguf_path = file.real_path;
  entry->format = format::ModelFormat::kGguf;
  entry->size_bytes = file.stamp.size;
  entry->modified = std::max(entry->modified, TimeOf(file.stamp));
  entry->architecture = facts->architecture;
  entry->parameter_count = facts->parameter_count;
  entry->quantization = facts->quantization;
  entry->gguf = facts->summary;
  return facts->pools;
}

bool Resolver::FromManifest(const Candidate& c, int depth, CatalogEntry* entry) {
  read_->insert(c.file.resolved.real_path);
  auto manifest = cache_->Modelfile(c.file.resolved.real_path, c.file.resolved.stamp);
  if (!manifest.has_value()) {
    entry->error = manifest.error();
    return false;
  }
  entry->from = manifest->from;
  auto target = ParseFrom(manifest->from);  // checked by the parse: cannot fail here
  if (!target.has_value()) {
    entry->error = target.error();
    return false;
  }
  if (target->kind == FromTarget::Kind::kModel) {
    return FromModel(target->model, *manifest, depth, entry);
  }
  // A GGUF beside the manifest, held to the same directory as every listed file.
  ResolvedFile weights = ResolveInside(c.real_root, Dirname(c.file.path) + "/" + target->file);
  if (!weights.error.ok()) {
    entry->error = weights.error.WithContext("FROM " + manifest->from);
    return false;
  }
  entry->defaults = manifest->defaults;
  return FromGguf(weights, entry);
}

bool Resolver::FromModel(const ModelName& base_name, const Manifest& manifest, int depth,
                         CatalogEntry* entry) {
  const std::string base = base_name.ToString();
  const std::string from = "FROM '" + manifest.from + "'";
  if (base == entry->name) {
    entry->error = InvalidArgumentError(
        from + " is this model itself; a manifest that derives from a model takes another name");
    return false;
  }
  if (resolving_.count(base) != 0) {
    entry->error = InvalidArgumentError(
        from + " leads back here: manifests derive from one another in a cycle");
    return false;
  }
  if (candidates_.count(base) == 0) {
    entry->error = NotFoundError(from + ": no such model in the models directories");
    return false;
  }
  if (depth + 1 >= kMaxFromDepth) {
    entry->error = InvalidArgumentError(from + ": more than " + std::to_string(kMaxFromDepth) +
                                        " manifests deriving from one another");
    return false;
  }
  const CatalogEntry& parent = Resolve(base, depth + 1);
  if (!parent.usable()) {
    entry->error = Status(parent.error.code(),
                          from + ": that model cannot be served: " + parent.error.message());
    return false;
  }
  entry->gguf_path = parent.gguf_path;
  entry->format = parent.format;
  entry->size_bytes = parent.size_bytes;
  entry->modified = std::max(entry->modified, parent.modified);
  entry->architecture = parent.architecture;
  entry->parameter_count = parent.parameter_count;
  entry->quantization = parent.quantization;
  entry->gguf = parent.gguf;
  entry->defaults = parent.defaults.OverriddenBy(manifest.defaults);
  return parent.embedding;
}

}  // namespace

std::vector<ModelDirectory> ModelDirectories(const std::string& models_dir,
                                             const std::vector<std::string>& system_dirs) {
  std::vector<ModelDirectory> dirs;
  auto add = [&dirs](const std::string& path, bool read_only) {
    if (path.empty()) return;
    for (const ModelDirectory& d : dirs) {
      if (d.path == path) return;
    }
    dirs.push_back(ModelDirectory{path, read_only});
  };
  add(models_dir, false);
  for (const std::string& dir : system_dirs) add(dir, true);
  return dirs;
}

const CatalogEntry* CatalogScan::Find(std::string_view name) const {
  auto canonical = CanonicalModelName(name);
  if (!canonical.has_value()) return nullptr;
  auto it =
      std::lower_bound(entries.begin(), entries.end(), *canonical,
                       [](const CatalogEntry& e, const std::string& n) { return e.name < n; });
  return it != entries.end() && it->name == *canonical ? &*it : nullptr;
}

Catalog::Catalog(std::vector<ModelDirectory> directories) : directories_(std::move(directories)) {}

CatalogScan Catalog::Scan() {
  std::lock_guard<std::mutex> lock(mu_);
  CatalogScan scan;
  std::map<std::string, Candidate> candidates;
  for (const ModelDirectory& dir : directories_) {
    auto listing = ListModelDir(dir.path);
    if (!listing.has_value()) {
      scan.directory_errors.push_back(listing.error());
      continue;
    }
    for (const Status& problem : listing->problems) scan.directory_errors.push_back(problem);
    AddCandidates(dir, std::move(*listing), &candidates);
  }
  std::set<std::string> read;
  Resolver resolver(candidates, &cache_, &read);
  for (const auto& [name, candidate] : candidates) {
    scan.entries.push_back(resolver.Resolve(name, 0));
  }
  cache_.KeepOnly(read);
  return scan;
}

uint64_t Catalog::gguf_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.gguf_reads();
}

uint64_t Catalog::modelfile_reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.modelfile_reads();
}

}  // namespace llmd::models
