// Download: the steps of download.h, each its own function.
// Thread-safety: Download blocks its caller; separate calls share nothing (download.h).
#include "fetch/download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "fetch/body_writer.h"
#include "fetch/partial_file.h"
#include "fetch/sha256.h"
#include "fetch/url_policy.h"

namespace llmd::fetch {
namespace {

// Step 1: everything that can be refused without touching the disk or the network.
Result<DownloadRequest> Checked(const DownloadRequest& request) {
  DownloadRequest r = request;
  LLMD_RETURN_IF_ERROR(CheckFetchUrl(r.url).error());
  LLMD_RETURN_IF_ERROR(CheckFileName(r.file_name));
  if (!r.sha256.empty()) {
    LLMD_ASSIGN_OR_RETURN(r.sha256, NormalizeSha256(r.sha256));
  }
  return r;
}

// The final file, when it is already there with the expected digest (bytes and sha256 set).
Result<bool> AlreadyPresent(const DownloadRequest& r, DownloadResult* out) {
  if (r.sha256.empty() || !FileExists(r.directory, r.file_name)) return false;
  const std::string path = r.directory + "/" + r.file_name;
  // O_NONBLOCK: a FIFO planted under the name must not hang the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;  // a symlink or unreadable: fetched again, renamed over it
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  Sha256 hash;
  Status s = HashFilePrefix(fd, static_cast<uint64_t>(st.st_size), path, hash);
  ::close(fd);
  LLMD_RETURN_IF_ERROR(s);
  out->path = path;
  out->bytes = static_cast<uint64_t>(st.st_size);
  out->sha256 = hash.HexDigest();
  out->already_present = true;
  return out->sha256 == r.sha256;
}

// Step 2 and 3: the partial file's bytes hashed, and the limits that the expected size
// already decides.
Status PrepareResume(const DownloadRequest& r, const DownloadOptions& o, PartialFile& file,
                     Sha256& hash) {
  const bool too_long =
      (r.expected_bytes >= 0 && file.size() > static_cast<uint64_t>(r.expected_bytes)) ||
      file.size() > o.max_bytes;
  if (too_long) LLMD_RETURN_IF_ERROR(file.Truncate());  // cannot be a prefix of the file
  LLMD_RETURN_IF_ERROR(HashFilePrefix(file.fd(), file.size(), file.path(), hash));
  if (r.expected_bytes < 0) return Status::Ok();
  const auto expected = static_cast<uint64_t>(r.expected_bytes);
  if (expected > o.max_bytes) {
    return ResourceExhaustedError(r.file_name + " is " + std::to_string(expected) +
                                  " bytes, over the limit of " + std::to_string(o.max_bytes));
  }
  return CheckRoomFor(r.directory, expected - file.size(), o.free_space_margin, o.free_bytes);
}

// Step 4 and 5: one transfer, and a second from zero when the first cannot continue the
// partial file. *total gets the announced size (-1 when unknown), *resumed_from the bytes of
// the partial file the last reply continued.
Status Fetch(const DownloadRequest& r, const DownloadOptions& o, PartialFile& file, Sha256& hash,
             const ProgressFn& progress, const std::atomic<bool>* cancel, int64_t* total,
             uint64_t* resumed_from) {
  for (int attempt = 0;; ++attempt) {
    BodyWriter writer(r, o, file, hash, progress, cancel);
    Status s = RunGet(r.url, file.size(), o.limits, writer);
    *total = writer.total();
    *resumed_from = writer.resumed_from();
    if (writer.verdict() == BodyWriter::Verdict::kRestart && attempt == 0) {
      LLMD_RETURN_IF_ERROR(file.Truncate());
      hash.Reset();
      continue;
    }
    LLMD_RETURN_IF_ERROR(s);
    if (*total >= 0 && file.size() != static_cast<uint64_t>(*total)) {
      return UnavailableError(r.url + ": the transfer ended at " + std::to_string(file.size()) +
                              " of " + std::to_string(*total) + " bytes");
    }
    writer.ReportFinal();  // the bytes are all in: a stop asked now changes nothing
    return Status::Ok();
  }
}

// Step 6: wrong bytes are deleted; right ones pre-checked and put in place.
Result<DownloadResult> Finish(const DownloadRequest& r, const DownloadOptions& o, PartialFile file,
                              const Sha256& hash) {
  DownloadResult out;
  out.bytes = file.size();
  out.sha256 = hash.HexDigest();
  out.path = file.final_path();
  if (r.expected_bytes >= 0 && file.size() != static_cast<uint64_t>(r.expected_bytes)) {
    file.Remove();
    return CorruptionError(r.url + ": got " + std::to_string(out.bytes) + " bytes, expected " +
                           std::to_string(r.expected_bytes) + "; the download was deleted");
  }
  if (!r.sha256.empty() && out.sha256 != r.sha256) {
    file.Remove();
    return CorruptionError(r.url + ": sha256 mismatch: expected " + r.sha256 + ", got " +
                           out.sha256 + "; the download was deleted");
  }
  if (o.precheck) {
    Status s = o.precheck(file.path());
    if (!s.ok()) {
      file.Remove();
      return s.WithContext(r.file_name + ": refused by the pre-check, the download was deleted");
    }
  }
  LLMD_RETURN_IF_ERROR(file.Commit());
  return out;
}

}  // namespace

Result<DownloadResult> Download(const DownloadRequest& request, const DownloadOptions& options,
                                const ProgressFn& progress, const std::atomic<bool>* cancel) {
  LLMD_ASSIGN_OR_RETURN(DownloadRequest r, Checked(request));
  DownloadResult present;
  LLMD_ASSIGN_OR_RETURN(bool done, AlreadyPresent(r, &present));
  if (done) return present;
  if (cancel != nullptr && cancel->load()) return CancelledError(r.url + ": cancelled");
  LLMD_ASSIGN_OR_RETURN(PartialFile file, PartialFile::Open(r.directory, r.file_name));
  Sha256 hash;
  int64_t total = -1;
  uint64_t kept = 0;
  Status s = PrepareResume(r, options, file, hash);
  if (s.ok()) s = Fetch(r, options, file, hash, progress, cancel, &total, &kept);
  if (!s.ok()) {
    file.RemoveIfEmpty();  // nothing to resume: leave nothing behind
    return s;
  }
  LLMD_ASSIGN_OR_RETURN(DownloadResult out, Finish(r, options, std::move(file), hash));
  out.resumed_from = kept;
  return out;
}

}  // namespace llmd::fetch
