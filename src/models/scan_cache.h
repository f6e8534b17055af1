// What the catalog learned from each file, kept between scans by the file's stamp (size,
// modification time, device and inode), so a rescan reads only files that changed: a GGUF's
// header is walked whole by the pre-check (its vocabulary included: megabytes on a large
// model), which a directory listing every few seconds must not repeat. A file's error is kept
// as its facts are: a broken file is not re-read until it changes.
//
// Thread-safety: none; the Catalog serializes its scans.
#ifndef LLMD_MODELS_SCAN_CACHE_H_
#define LLMD_MODELS_SCAN_CACHE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "format/gguf_precheck.h"
#include "format/model_format.h"
#include "llmd/result.h"
#include "models/model_dir.h"
#include "models/modelfile.h"

namespace llmd::models {

// What the catalog shows of a GGUF (from format::ReadGgufMetadata, after the pre-check).
struct GgufFacts {
  std::string architecture;
  uint64_t parameter_count = 0;
  std::optional<uint32_t> file_type;
  std::string quantization;  // format::FileTypeName(file_type): "Q4_K_M", "unknown"
  // The file sets `<arch>.pooling_type` to something other than none: an embedding model
  // (llama.cpp pools its outputs only for those).
  bool pools = false;
  // The pre-check's summary: the model's shape, which sizes its context before it loads.
  format::GgufSummary summary;
};

class ScanCache {
 public:
  // The facts of the GGUF at `real_path` whose stamp is `stamp`: from the cache when the stamp
  // is the one last read, else read now. Errors name the path.
  Result<GgufFacts> Gguf(const std::string& real_path, const FileStamp& stamp);
  // The manifest at `real_path`, parsed; the same rule.
  Result<Manifest> Modelfile(const std::string& real_path, const FileStamp& stamp);
  // Forgets every file not in `paths` (those the last scan saw).
  void KeepOnly(const std::set<std::string>& paths);

  // Files read (not served from the cache) so far: what the rescan tests count.
  uint64_t gguf_reads() const { return gguf_reads_; }
  uint64_t modelfile_reads() const { return modelfile_reads_; }

 private:
  template <typename T>
  struct Slot {
    FileStamp stamp;
    Result<T> value;
  };
  std::map<std::string, Slot<GgufFacts>> gguf_;
  std::map<std::string, Slot<Manifest>> modelfiles_;
  uint64_t gguf_reads_ = 0;
  uint64_t modelfile_reads_ = 0;
};

// Reads the facts of the GGUF at `path` now, uncached: sniffs its format (a file named .gguf
// that is something else says what it is), then pre-checks it.
Result<GgufFacts> ReadGgufFacts(const std::string& path);

}  // namespace llmd::models

#endif  // LLMD_MODELS_SCAN_CACHE_H_
