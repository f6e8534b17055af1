#include "transport/frame_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace llmd::transport {
namespace {

constexpr int kPollSliceMs = 100;

int64_t NowMs() { return RealClock::Get().NowMs(); }

}  // namespace

std::string_view OutcomeName(FrameConnection::Outcome o) {
  switch (o) {
    case FrameConnection::Outcome::kFrame: return "frame";
    case FrameConnection::Outcome::kClosed: return "closed";
    case FrameConnection::Outcome::kTruncated: return "truncated_frame";
    case FrameConnection::Outcome::kIdleTimeout: return "idle_timeout";
    case FrameConnection::Outcome::kFrameTimeout: return "frame_timeout";
    case FrameConnection::Outcome::kProtocolError: return "protocol_error";
    case FrameConnection::Outcome::kStopped: return "stopped";
    case FrameConnection::Outcome::kIoError: return "io_error";
  }
  return "unknown";
}

FrameConnection::FrameConnection(int fd) : fd_(fd) {
  int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

FrameConnection::~FrameConnection() { ::close(fd_); }

FrameConnection::ReadResult FrameConnection::ReadFrame(int idle_ms, int frame_ms,
                                                      const std::atomic<bool>* stop) {
  if (pushed_back_) {
    std::string frame = std::move(*pushed_back_);
    pushed_back_.reset();
    return {Outcome::kFrame, std::move(frame), {}};
  }
  int64_t deadline = NowMs() + idle_ms;
  bool started = decoder_.mid_frame();
  if (started) deadline = NowMs() + frame_ms;
  char buf[16384];
  while (true) {
    // Decode what we have first: a pipelined frame may already be complete.
    if (!pending_.empty()) {
      auto used = decoder_.Feed(pending_);
      if (!used.has_value()) return {Outcome::kProtocolError, {}, used.error()};
      pending_.erase(0, *used);
    }
    if (auto frame = decoder_.TakeFrame()) return {Outcome::kFrame, std::move(*frame), {}};
    if (!started && decoder_.mid_frame()) {
      started = true;
      deadline = NowMs() + frame_ms;  // the per-frame deadline runs from the first byte
    }
    if (eof_) {
      return {decoder_.mid_frame() ? Outcome::kTruncated : Outcome::kClosed, {}, {}};
    }
    if (stop != nullptr && stop->load()) return {Outcome::kStopped, {}, {}};
    // Always look once, even with no time left, so a zero deadline still sees what arrived.
    int64_t left = deadline - NowMs();
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 0, kPollSliceMs)));
    if (rc < 0 && errno != EINTR) return {Outcome::kIoError, {}, InternalError(std::strerror(errno))};
    if (rc <= 0) {
      if (left <= 0) return {started ? Outcome::kFrameTimeout : Outcome::kIdleTimeout, {}, {}};
      continue;
    }
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      pending_.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      eof_ = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      if (errno == ECONNRESET) {
        eof_ = true;
      } else {
        return {Outcome::kIoError, {}, InternalError(std::strerror(errno))};
      }
    }
  }
}

Status FrameConnection::WriteFrame(std::string_view payload, int timeout_ms) {
  const std::string frame = proto::EncodeFrame(payload);
  const int64_t deadline = NowMs() + timeout_ms;
  size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return CancelledError(std::string("peer gone: ") + std::strerror(errno));
    }
    int64_t left = deadline - NowMs();
    if (left <= 0) return DeadlineExceededError("peer did not read within the write deadline");
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, kPollSliceMs)));
    if (p.revents & (POLLHUP | POLLERR)) return CancelledError("peer gone");
  }
  return Status::Ok();
}

bool FrameConnection::PeerGone() const {
  pollfd p{fd_, 0, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
}

}  // namespace llmd::transport
