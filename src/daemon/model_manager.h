// ModelManager: the daemon's model management (sched::ModelAdmin): pulls, creates, copies and
// deletes models in the writable models directory (models_dir), and keeps uploaded blobs in
// its `.blobs/` folder (a '.' name: the catalog and the watcher skip it). The system
// directories are only read.
//
// Files are never written in place: a model's GGUF and manifest are written under a '.' name
// in their folder and renamed into place when whole (a pull: under `<file>.partial`, fetch/);
// after each change the catalog is rescanned before the call returns, so a reply that says
// "success" is followed by listings that show it.
//
// Safety: every name is parsed (models/model_name.h: no "..", no '/', no absolute path) before
// a path is built from it; a namespace folder is created, or used only when it is a real
// folder (not a symlink, which could lead out of models_dir); files are opened O_NOFOLLOW.
// Deleting a model that a request holds, or that is loading, is refused (Unavailable: retry
// once it drains); the config's own models (model_path, models) are never deleted.
//
// Thread-safety: every method is thread-safe (one lock over the changes; pulls run outside it,
// one download per file: fetch::PullRegistry). Lifetime: the catalog and the registry outlive it.
#ifndef LLMD_DAEMON_MODEL_MANAGER_H_
#define LLMD_DAEMON_MODEL_MANAGER_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/model_registry.h"
#include "fetch/hub_resolver.h"
#include "fetch/pull_registry.h"
#include "models/catalog.h"
#include "sched/model_admin.h"

namespace llmd::daemon {

class ModelManager final : public sched::ModelAdmin {
 public:
  // `rescan`: scans the catalog into the registry (Daemon::Rescan). `stopping`: raised at
  // shutdown, it stops running pulls (their partial files stay for the next pull).
  ModelManager(const config::DaemonConfig& config, models::Catalog& catalog, ModelRegistry& registry,
               std::function<void()> rescan, const std::atomic<bool>* stopping);

  Result<sched::PulledModel> Pull(std::string_view source, const sched::PullProgressFn& progress,
                                  const std::atomic<bool>* cancel) override;
  Status Create(const sched::CreateModelRequest& request) override;
  Status Copy(std::string_view source, std::string_view destination) override;
  Status Delete(std::string_view name) override;
  Result<bool> HasBlob(std::string_view digest) override;
  Status PutBlob(std::string_view digest, std::string_view bytes) override;

 private:
  // The folder of `name`'s files in models_dir (made if missing); refuses a symlinked one.
  Result<std::string> FolderFor(const models::ModelName& name);
  // Refuses a destination that already names a model in models_dir or in the config.
  Status CheckFree(const models::ModelName& name, const models::CatalogScan& scan) const;
  // The usable model `name` as the catalog lists it.
  Result<models::CatalogEntry> Usable(std::string_view name, const models::CatalogScan& scan) const;
  // `src` hard-linked (or copied, across file systems) to `<folder>/<file>` through a '.' name.
  Status PlaceFile(const std::string& src, const std::string& folder, const std::string& file);
  Status WriteManifest(const std::string& folder, const std::string& file, const models::Manifest& manifest);
  Result<std::string> BlobPath(std::string_view digest) const;
  bool Configured(const std::string& name) const;

  const std::string models_dir_;
  const std::vector<std::string> configured_names_;
  const std::vector<std::string> configured_paths_;  // resolved
  const fetch::HubOptions hub_;
  models::Catalog& catalog_;
  ModelRegistry& registry_;
  const std::function<void()> rescan_;
  const std::atomic<bool>* const stopping_;
  std::mutex mu_;  // create, copy, delete and blob writes, one at a time
  fetch::PullRegistry pulls_;
};

}  // namespace llmd::daemon

#endif  // LLMD_DAEMON_MODEL_MANAGER_H_
