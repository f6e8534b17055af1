#include "models/model_dir.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "models/model_name.h"
#include "models/modelfile.h"

namespace llmd::models {
namespace {

Status ErrnoError(const std::string& path, int err) {
  std::string msg = path + ": " + std::strerror(err);
  return err == ENOENT ? NotFoundError(std::move(msg)) : InvalidArgumentError(std::move(msg));
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

FileStamp StampOf(const struct stat& st) {
  FileStamp stamp;
  stamp.size = static_cast<uint64_t>(st.st_size);
  stamp.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  stamp.device = static_cast<uint64_t>(st.st_dev);
  stamp.inode = static_cast<uint64_t>(st.st_ino);
  return stamp;
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

// Lists one folder's model files into `out`; at the top, also the namespace folders in it.
Status ListFolder(const std::string& folder, const std::string& prefix,
                  const std::string& real_root, std::vector<std::string>* namespaces,
                  std::vector<DirFile>* out) {
  std::unique_ptr<DIR, DirCloser> dir(::opendir(folder.c_str()));
  if (!dir) return ErrnoError(folder, errno);
  while (const dirent* ent = ::readdir(dir.get())) {
    const std::string name = ent->d_name;
    if (name.empty() || name.front() == '.') continue;
    const std::string path = folder + "/" + name;
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) != 0) continue;  // gone since readdir: the next scan agrees
    if (S_ISDIR(lst.st_mode)) {
      if (namespaces != nullptr && IsValidNamespace(name)) namespaces->push_back(name);
      continue;
    }
    DirFile file;
    if (EndsWith(name, kGgufExtension)) {
      file.kind = DirFile::Kind::kGguf;
      file.stem = prefix + name.substr(0, name.size() - kGgufExtension.size());
    } else if (EndsWith(name, kModelfileExtension)) {
      file.kind = DirFile::Kind::kModelfile;
      file.stem = prefix + name.substr(0, name.size() - kModelfileExtension.size());
    } else {
      continue;
    }
    file.path = path;
    file.resolved = ResolveInside(real_root, path);
    out->push_back(std::move(file));
  }
  return Status::Ok();
}

}  // namespace

ResolvedFile ResolveInside(const std::string& real_root, const std::string& path) {
  ResolvedFile out;
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) {
    const int err = errno;
    struct stat lst {};
    const bool link = ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
    out.error = link && err == ENOENT ? NotFoundError(path + ": a symlink to a missing file")
                                      : ErrnoError(path, err);
    return out;
  }
  const std::string resolved = real.get();
  const std::string inside = real_root == "/" ? real_root : real_root + "/";
  if (resolved.compare(0, inside.size(), inside) != 0) {
    out.error = InvalidArgumentError(path + ": resolves to " + resolved + ", outside " + real_root +
                                     "; a model's file must be inside its models directory");
    return out;
  }
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) {
    out.error = ErrnoError(path, errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.error = InvalidArgumentError(path + ": " + KindOf(st.st_mode) + ", not a model file");
    return out;
  }
  out.real_path = resolved;
  out.stamp = StampOf(st);
  return out;
}

Result<DirListing> ListModelDir(const std::string& dir) {
  DirListing listing;
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(dir.c_str(), nullptr), &std::free);
  if (!real) {
    if (errno == ENOENT) return listing;  // not made yet: no models, no error
    return ErrnoError(dir, errno);
  }
  listing.exists = true;
  listing.real_root = real.get();
  struct stat st {};
  if (::stat(listing.real_root.c_str(), &st) != 0) return ErrnoError(dir, errno);
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError(dir + ": not a directory");

  std::vector<std::string> namespaces;
  LLMD_RETURN_IF_ERROR(ListFolder(dir, "", listing.real_root, &namespaces, &listing.files));
  std::sort(namespaces.begin(), namespaces.end());
  for (const std::string& ns : namespaces) {
    Status listed =
        ListFolder(dir + "/" + ns, ns + "/", listing.real_root, nullptr, &listing.files);
    if (!listed.ok()) listing.problems.push_back(listed);
  }
  std::sort(listing.files.begin(), listing.files.end(), [](const DirFile& a, const DirFile& b) {
    return a.stem != b.stem ? a.stem < b.stem : a.kind < b.kind;
  });
  return listing;
}

}  // namespace llmd::models
