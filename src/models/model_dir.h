// What one models directory holds: its GGUF files (`*.gguf`) and manifests (`*.modelfile`),
// at its top and in its namespace folders one level down (`<dir>/<namespace>/*`), each with
// the file it really is. A file that is a symlink must resolve inside the directory (after
// every link, the directory's own included): one that points elsewhere, dangles, or is not a
// regular file is listed with its error, never followed. So a writable models directory
// cannot be used to make the daemon read /etc/shadow as a model.
//
// Skipped without a word: names starting with '.' (temporary files being written, which are
// renamed into place when whole), other extensions, and folders that are symlinks or are not
// valid namespaces. The extensions are matched in lower case only.
//
// Thread-safety: stateless functions; they only read the file system.
#ifndef LLMD_MODELS_MODEL_DIR_H_
#define LLMD_MODELS_MODEL_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "llmd/result.h"

namespace llmd::models {

// What identifies one version of a file: a rescan re-reads a file when any of these changed.
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

// A file below a models directory, checked.
struct ResolvedFile {
  std::string real_path;  // every link resolved, inside the directory; "" with an error
  FileStamp stamp;        // of real_path
  Status error;           // why the file cannot be used; OK when it can
};

struct DirFile {
  enum class Kind { kGguf, kModelfile };
  Kind kind = Kind::kGguf;
  std::string stem;  // relative to the directory, extension dropped: "qwen3", "ns/m:8b"
  std::string path;  // as found: "<dir>/<stem><extension>"
  ResolvedFile resolved;
};

struct DirListing {
  bool exists = false;           // false: the directory is not there (yet); `files` is empty
  std::string real_root;         // the directory with every link resolved
  std::vector<DirFile> files;    // by stem, then GGUF before manifest
  std::vector<Status> problems;  // namespace folders that could not be read
};

// Lists `dir`. A missing directory is not an error (exists = false); one that cannot be read
// is, with its path.
Result<DirListing> ListModelDir(const std::string& dir);

// Resolves `path` (a file below the directory whose resolved form is `real_root`) and checks
// it as ListModelDir checks what it lists: there, inside, a regular file.
ResolvedFile ResolveInside(const std::string& real_root, const std::string& path);

}  // namespace llmd::models

#endif  // LLMD_MODELS_MODEL_DIR_H_
