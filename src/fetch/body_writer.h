// BodyWriter: the GetHandler of one download attempt (download.cc runs one or two). It judges
// the reply's head against the resume offset, the size limits and the free space before any
// body byte is written, then appends the body to the partial file and the running hash,
// refusing bytes past the limit or past what was announced, and reports progress.
//
// Internal to download.cc. Thread-safety: used by the one thread running the transfer.
#ifndef LLMD_FETCH_BODY_WRITER_H_
#define LLMD_FETCH_BODY_WRITER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "fetch/download.h"
#include "fetch/http_get.h"
#include "fetch/partial_file.h"
#include "fetch/sha256.h"

namespace llmd::fetch {

class BodyWriter final : public GetHandler {
 public:
  // What the reply's head decided, beyond writing the body.
  enum class Verdict {
    kWrite,            // the body continues (or starts) the file
    kAlreadyComplete,  // 416 for a partial file that is already the whole file
    kRestart,          // the reply does not continue the partial file: start again from zero
  };

  BodyWriter(const DownloadRequest& request, const DownloadOptions& options, PartialFile& file,
             Sha256& hash, const ProgressFn& progress, const std::atomic<bool>* cancel);

  Status OnHead(const ResponseHead& head) override;
  Status OnBody(std::string_view bytes) override;
  bool KeepGoing() override;

  Verdict verdict() const { return verdict_; }
  int64_t total() const { return total_; }
  // The bytes of the partial file this reply continues (0 after a restart from zero).
  uint64_t resumed_from() const { return restarted_ ? 0 : asked_from_; }
  // Reports the final progress (unthrottled).
  void ReportFinal() { Report(true); }

 private:
  Status OnPartialContent(const ResponseHead& head);
  Status OnRangeNotSatisfiable(const ResponseHead& head);
  // The announced size against the expected size, max_bytes and the free space.
  Status CheckTotal();
  bool Report(bool force);
  Status Restart(std::string why);

  const DownloadRequest& request_;
  const DownloadOptions& options_;
  PartialFile& file_;
  Sha256& hash_;
  const ProgressFn& progress_;
  const std::atomic<bool>* cancel_;
  const uint64_t asked_from_;  // the Range start sent (0: none)
  Verdict verdict_ = Verdict::kWrite;
  int64_t total_ = -1;
  uint64_t received_ = 0;   // body bytes of this reply
  bool stopped_ = false;    // the progress callback said stop
  bool restarted_ = false;  // a 200 to a Range request: the file starts over
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_report_;
};

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_BODY_WRITER_H_
