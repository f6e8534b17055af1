// Download: one model file from a URL into a directory, resumable, verified, and put in place
// atomically. The steps, in order:
//
//  1. Checks: the URL policy (url_policy.h), a plain file name, a well-formed sha256. When the
//     final file is already there with the expected sha256, nothing is fetched.
//  2. `<final>.partial` is opened and locked (partial_file.h); its bytes are hashed, since the
//     digest covers the whole file.
//  3. Before a byte is fetched: the size (when known from the caller or hub metadata) against
//     max_bytes, and the free space against what is still to come plus a margin.
//  4. GET with "Range: bytes=N-" when N bytes are there. 206 continues at N (its Content-Range
//     must start at N, else the partial is dropped and the file fetched anew, once); 200 to a
//     Range request restarts from zero; 416 whose Content-Range says the file is N bytes means
//     the partial is already whole; any other 416 restarts from zero, once. The announced size
//     is checked again (max_bytes, free space, the expected size) before the first body byte
//     is written. A body past max_bytes, or past what was announced, is aborted.
//  5. The transfer must end with exactly the announced bytes: a connection that closes early
//     is an error and leaves the partial file to resume. (A server that announces fewer bytes
//     than the file has ends the transfer "complete" at its own length: only the expected
//     size or sha256 can tell; the daemon's GGUF pre-check usually catches the cut too.)
//  6. The expected size and sha256 are checked: a mismatch deletes the partial file and names
//     both digests. Then the caller's pre-check runs on the complete file (a failure deletes
//     it too), and only then is it renamed into place (fsync, rename, fsync of the directory).
//
// Cancelling (the flag, or the progress callback returning false) stops the transfer within
// about a second; the partial file stays for the next pull. A failed pull that wrote nothing
// leaves nothing behind.
//
// Thread-safety: Download blocks its calling thread; concurrent Downloads of different files
// are independent. The same destination from two threads of one process: use PullRegistry
// (pull_registry.h); from two processes: the second gets Unavailable (the partial's lock).
#ifndef LLMD_FETCH_DOWNLOAD_H_
#define LLMD_FETCH_DOWNLOAD_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "fetch/free_space.h"
#include "fetch/http_get.h"
#include "llmd/result.h"

namespace llmd::fetch {

struct Progress {
  uint64_t done_bytes = 0;      // in the file so far, resumed bytes included
  int64_t total_bytes = -1;     // the whole file; -1 while unknown
  double bytes_per_second = 0;  // this transfer's average since its reply began
};

// Called on the downloading thread; returning false cancels the download.
using ProgressFn = std::function<bool(const Progress&)>;

// Runs on the complete file (still under its .partial name) before it is put in place; an
// error refuses it. The daemon passes its GGUF pre-check.
using PrecheckFn = std::function<Status(const std::string& path)>;

struct DownloadRequest {
  std::string url;              // https, or http to a loopback host
  std::string directory;        // must exist
  std::string file_name;        // the final name in it (partial_file.h: CheckFileName)
  std::string sha256;           // expected digest, hex (any case, "sha256:" prefix ok); "": none
  int64_t expected_bytes = -1;  // the file's size when known (hub metadata); -1: unknown
};

struct DownloadOptions {
  uint64_t max_bytes = uint64_t{512} << 30;          // 512 GiB: refuse anything larger
  uint64_t free_space_margin = uint64_t{256} << 20;  // left free after the download
  FreeBytesFn free_bytes = FreeBytes;
  PrecheckFn precheck;  // none: no check
  TransferLimits limits;
  int progress_interval_ms = 200;  // at most one progress call per interval (and one at the end)
};

struct DownloadResult {
  std::string path;  // the final file
  uint64_t bytes = 0;
  std::string sha256;            // computed over the whole file
  uint64_t resumed_from = 0;     // bytes of an earlier partial file kept
  bool already_present = false;  // the final file had the expected sha256; nothing fetched
};

Result<DownloadResult> Download(const DownloadRequest& request, const DownloadOptions& options,
                                const ProgressFn& progress = nullptr,
                                const std::atomic<bool>* cancel = nullptr);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_DOWNLOAD_H_
