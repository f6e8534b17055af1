// The catalog of models on disk: every model in the models directories, each with its
// weights, what its GGUF says about it, its manifest's defaults and whether it can be served.
//
// Directories are searched in order: the writable `models_dir` first, then the read-only
// system directories, and the first one holding a name wins it (a user's model hides a system
// one of the same name). Within one directory a model is:
//  - a GGUF file, named by its file stem (`qwen3-8b.gguf` is "qwen3-8b", `qwen3:8b.gguf` is
//    "qwen3:8b"), or in a namespace folder (`library/qwen3.gguf` is "library/qwen3");
//  - or a manifest, `<name>.modelfile` (modelfile.h), whose FROM names a GGUF in its folder or
//    another model (in any directory), whose weights and defaults it starts from. A manifest
//    and a GGUF of one name: the manifest is the model.
// A model that cannot be served is still listed, with the reason (`error`): a file whose name
// is not a valid model name, a GGUF that fails the pre-check, a symlink that leaves its
// directory, a manifest that does not parse or whose FROM is missing, unusable or a cycle.
// Nothing in a directory can make a scan fail or crash; a directory that cannot be read is
// reported in CatalogScan::directory_errors and contributes nothing.
//
// A scan reads only what changed since the last one (scan_cache.h). It is a snapshot: the
// files can change right after it; DirWatcher says when to scan again.
//
// Thread-safety: Scan may be called from any thread; scans are serialized (one cache).
#ifndef LLMD_MODELS_CATALOG_H_
#define LLMD_MODELS_CATALOG_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_precheck.h"
#include "format/model_format.h"
#include "llmd/result.h"
#include "models/modelfile.h"
#include "models/scan_cache.h"

namespace llmd::models {

struct ModelDirectory {
  std::string path;
  bool read_only = false;  // a system directory: models there are never written or removed
};

// The search order: `models_dir` (writable; skipped when empty), then `system_dirs`
// (read-only), each once (a repeat is dropped).
std::vector<ModelDirectory> ModelDirectories(const std::string& models_dir,
                                             const std::vector<std::string>& system_dirs);

// How deep a chain of manifests may derive from one another (FROM another model).
inline constexpr int kMaxFromDepth = 16;

struct CatalogEntry {
  // The canonical model name (model_name.h); for a file whose stem is not a valid name, the
  // stem itself (and `error` says why).
  std::string name;
  std::string directory;  // the models directory it was found in, as configured
  bool read_only = false;
  std::string source_path;          // the file that defines it, as found: its GGUF or its manifest
  std::optional<std::string> from;  // the manifest's FROM; none for a bare GGUF

  // The weights: every link resolved, checked inside the directory; what a loader opens.
  std::string gguf_path;
  format::ModelFormat format = format::ModelFormat::kGguf;
  uint64_t size_bytes = 0;
  // The latest modification of the files that make the model (manifest, base's, GGUF).
  std::chrono::system_clock::time_point modified;
  std::string architecture;
  uint64_t parameter_count = 0;
  std::string quantization;
  format::GgufSummary gguf;  // the pre-check's summary of the weights (the model's shape)

  // Its defaults: its base's (FROM another model), overridden by its own manifest's.
  ModelDefaults defaults;
  // Serves embeddings: the manifest's EMBEDDING; without one, the GGUF pools its outputs.
  bool embedding = false;

  Status error;  // OK: it can be served; otherwise why not
  bool usable() const { return error.ok(); }
};

struct CatalogScan {
  std::vector<CatalogEntry> entries;  // by name (byte order)
  std::vector<Status> directory_errors;
  // The entry for `name` in either form ("m" or "m:latest"); nullptr when there is none or
  // `name` is not a valid name.
  const CatalogEntry* Find(std::string_view name) const;
};

class Catalog {
 public:
  explicit Catalog(std::vector<ModelDirectory> directories);
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  CatalogScan Scan();

  const std::vector<ModelDirectory>& directories() const { return directories_; }
  // Files read rather than served from the cache, over every scan so far.
  uint64_t gguf_reads() const;
  uint64_t modelfile_reads() const;

 private:
  const std::vector<ModelDirectory> directories_;
  mutable std::mutex mu_;
  ScanCache cache_;  // guarded by mu_
};

}  // namespace llmd::models

#endif  // LLMD_MODELS_CATALOG_H_
