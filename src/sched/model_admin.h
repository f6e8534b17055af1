// ModelAdmin: model management as the front ends see it (Ollama's /api/pull, /api/create,
// /api/copy, /api/delete, /api/blobs; the native PullModel, CopyModel, DeleteModel): pull a
// GGUF into the writable models directory, make a model from another or from an uploaded
// blob, copy one, delete one. The daemon implements it (daemon/model_manager.h); front ends
// check that the peer may (config::IsModelAdmin) before they call it. Every name is checked
// (models/model_name.h) before a path is built from it; every call that changes the models
// directory returns only once the catalog lists the change.
//
// Thread-safety: every method is thread-safe; Pull blocks its caller for the download.
#ifndef LLMD_SCHED_MODEL_ADMIN_H_
#define LLMD_SCHED_MODEL_ADMIN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmd/result.h"

namespace llmd::sched {

// Where a pull is, for its progress stream.
struct PullProgress {
  enum class Phase { kResolving, kDownloading };
  Phase phase = Phase::kResolving;
  std::string file_name;        // kDownloading: the file being fetched
  std::string sha256;           // its expected digest, hex; "" when unknown (a plain URL)
  uint64_t done_bytes = 0;      // in the file so far, resumed bytes included
  int64_t total_bytes = -1;     // -1 while unknown
  double bytes_per_second = 0;
};
// Called on the pulling thread; returning false cancels the pull (the partial file stays).
using PullProgressFn = std::function<bool(const PullProgress&)>;

struct PulledModel {
  std::string name;    // the model's name: its file's stem
  std::string path;    // the file in models_dir
  uint64_t bytes = 0;
  std::string sha256;  // computed over the whole file
  bool already_present = false;
};

struct CreateModelRequest {
  std::string name;
  std::optional<std::string> from;  // a model in the models directories
  std::optional<std::string> system;
  std::optional<std::string> chat_template;
  // PARAMETER lines: key, value as a Modelfile writes it (stop may repeat).
  std::vector<std::pair<std::string, std::string>> parameters;
  // Uploaded blobs by file name ("model.gguf" -> "sha256:<hex>"): one GGUF, the weights.
  std::vector<std::pair<std::string, std::string>> files;
};

class ModelAdmin {
 public:
  virtual ~ModelAdmin() = default;
  // `source`: an https URL (http to loopback), or hf.co/owner/repo[:quant or file].
  virtual Result<PulledModel> Pull(std::string_view source, const PullProgressFn& progress,
                                   const std::atomic<bool>* cancel) = 0;
  virtual Status Create(const CreateModelRequest& request) = 0;
  virtual Status Copy(std::string_view source, std::string_view destination) = 0;
  virtual Status Delete(std::string_view name) = 0;
  // `digest`: "sha256:<64 lowercase hex>".
  virtual Result<bool> HasBlob(std::string_view digest) = 0;
  virtual Status PutBlob(std::string_view digest, std::string_view bytes) = 0;
};

}  // namespace llmd::sched

#endif  // LLMD_SCHED_MODEL_ADMIN_H_
