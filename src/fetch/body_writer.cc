// BodyWriter: the per-reply decisions of a download (see download.h, step 4).
// Thread-safety: one transfer thread (body_writer.h).
#include "fetch/body_writer.h"

#include <utility>

#include "fetch/content_range.h"

namespace llmd::fetch {

BodyWriter::BodyWriter(const DownloadRequest& request, const DownloadOptions& options,
                       PartialFile& file, Sha256& hash, const ProgressFn& progress,
                       const std::atomic<bool>* cancel)
    : request_(request),
      options_(options),
      file_(file),
      hash_(hash),
      progress_(progress),
      cancel_(cancel),
      asked_from_(file.size()),
      started_(std::chrono::steady_clock::now()),
      last_report_(started_) {}

Status BodyWriter::OnHead(const ResponseHead& head) {
  started_ = std::chrono::steady_clock::now();
  if (head.status == 206) {
    LLMD_RETURN_IF_ERROR(OnPartialContent(head));
  } else if (head.status == 416 && asked_from_ > 0) {
    return OnRangeNotSatisfiable(head);
  } else if (head.status == 200) {
    // A 200 to a Range request is the whole file again: start over (a server without ranges).
    if (asked_from_ > 0) {
      LLMD_RETURN_IF_ERROR(file_.Truncate());
      hash_.Reset();
      restarted_ = true;
    }
    total_ = head.content_length;
  } else {
    return HttpStatusError(head.status, request_.url);
  }
  if (total_ < 0) total_ = request_.expected_bytes;  // for progress; the end checks it
  LLMD_RETURN_IF_ERROR(CheckTotal());
  Report(true);
  return Status::Ok();
}

Status BodyWriter::OnPartialContent(const ResponseHead& head) {
  if (asked_from_ == 0) {
    return UnavailableError(request_.url + ": 206 Partial Content to a request without a Range");
  }
  auto range = ParseContentRange(head.content_range);
  if (!range || !range->has_range) {
    return Restart("206 without a usable Content-Range ('" + head.content_range + "')");
  }
  if (range->first != asked_from_) {
    return Restart("asked for bytes from " + std::to_string(asked_from_) +
                   ", the reply starts at " + std::to_string(range->first));
  }
  const uint64_t span = range->last - range->first + 1;
  if (head.content_length >= 0 && static_cast<uint64_t>(head.content_length) != span) {
    return Restart("Content-Length " + std::to_string(head.content_length) +
                   " does not match Content-Range " + head.content_range);
  }
  total_ = range->complete >= 0 ? range->complete : -1;
  return Status::Ok();
}

Status BodyWriter::OnRangeNotSatisfiable(const ResponseHead& head) {
  auto range = ParseContentRange(head.content_range);
  if (range && !range->has_range && range->complete == static_cast<int64_t>(asked_from_)) {
    // The partial file is as long as the file: an earlier pull stopped after the last byte.
    verdict_ = Verdict::kAlreadyComplete;
    total_ = range->complete;
    return Status::Ok();
  }
  return Restart("416 Range Not Satisfiable for bytes from " + std::to_string(asked_from_));
}

Status BodyWriter::Restart(std::string why) {
  verdict_ = Verdict::kRestart;
  // Stops this transfer; download.cc looks at the verdict before the status.
  return UnavailableError(request_.url + ": cannot resume: " + std::move(why));
}

Status BodyWriter::CheckTotal() {
  if (total_ < 0) return Status::Ok();
  const auto total = static_cast<uint64_t>(total_);
  if (request_.expected_bytes >= 0 && total_ != request_.expected_bytes) {
    return CorruptionError(request_.url + ": the server announces " + std::to_string(total) +
                           " bytes, expected " + std::to_string(request_.expected_bytes));
  }
  if (total > options_.max_bytes) {
    return ResourceExhaustedError(request_.url + ": the file is " + std::to_string(total) +
                                  " bytes, over the limit of " +
                                  std::to_string(options_.max_bytes));
  }
  const uint64_t remaining = total > file_.size() ? total - file_.size() : 0;
  return CheckRoomFor(request_.directory, remaining, options_.free_space_margin,
                      options_.free_bytes);
}

Status BodyWriter::OnBody(std::string_view bytes) {
  if (verdict_ == Verdict::kAlreadyComplete) return Status::Ok();  // the 416's error page
  if (stopped_ || (cancel_ != nullptr && cancel_->load())) {
    return CancelledError(request_.url + ": cancelled");
  }
  const uint64_t after = file_.size() + bytes.size();
  // Either way the partial file is no prefix worth resuming: emptied, so it is removed.
  if (after > options_.max_bytes) {
    (void)file_.Truncate();
    return ResourceExhaustedError(request_.url + ": the body passes the limit of " +
                                  std::to_string(options_.max_bytes) + " bytes; aborted");
  }
  if (total_ >= 0 && after > static_cast<uint64_t>(total_)) {
    (void)file_.Truncate();
    return CorruptionError(request_.url + ": the server sends more than the " +
                           std::to_string(total_) + " bytes it announced; aborted");
  }
  LLMD_RETURN_IF_ERROR(file_.Append(bytes));
  hash_.Update(bytes);
  received_ += bytes.size();
  return Status::Ok();
}

bool BodyWriter::KeepGoing() {
  if (cancel_ != nullptr && cancel_->load()) return false;
  return Report(false);
}

bool BodyWriter::Report(bool force) {
  if (stopped_) return false;
  if (!progress_) return true;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_report_ < std::chrono::milliseconds(options_.progress_interval_ms)) {
    return true;
  }
  last_report_ = now;
  const double seconds = std::chrono::duration<double>(now - started_).count();
  Progress p;
  p.done_bytes = file_.size();
  p.total_bytes = total_;
  p.bytes_per_second = seconds > 0 ? static_cast<double>(received_) / seconds : 0;
  stopped_ = !progress_(p);
  return !stopped_;
}

}  // namespace llmd::fetch
