// RecordingResponder: a Responder for tests that keeps what was sent (status, content type,
// the body or the stream's chunks joined) and runs StartThread tasks on threads it joins when
// destroyed. Test-only.
#ifndef LLMD_HTTP_RECORDING_RESPONDER_H_
#define LLMD_HTTP_RECORDING_RESPONDER_H_

#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "http/http_server.h"

namespace llmd::http {

class RecordingResponder final : public Responder {
 public:
  explicit RecordingResponder(bool threads = true) : threads_(threads) {}
  ~RecordingResponder() override {
    for (auto& t : started_) t.join();
  }
  bool Send(int status, std::string_view type, std::string_view body, const Headers& /*extra*/) override {
    status_ = status;
    type_ = type;
    body_ = body;
    return true;
  }
  bool BeginStream(int status, std::string_view type, const Headers& /*extra*/) override {
    status_ = status;
    type_ = type;
    return true;
  }
  bool WriteChunk(std::string_view data) override {
    body_ += data;
    return !stop_reading_after_first_chunk_ || ++chunks_ < 2;
  }
  bool EndStream() override {
    ended_ = true;
    return true;
  }
  int fd() const override { return -1; }
  bool StartThread(const std::function<void()>& task) override {
    if (!threads_) return false;
    started_.emplace_back(task);
    return true;
  }

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& body() const { return body_; }
  bool ended() const { return ended_; }
  size_t threads_started() const { return started_.size(); }
  void StopReadingAfterFirstChunk() { stop_reading_after_first_chunk_ = true; }

 private:
  const bool threads_;
  std::vector<std::thread> started_;
  int status_ = 0;
  std::string type_, body_;
  bool ended_ = false;
  bool stop_reading_after_first_chunk_ = false;
  int chunks_ = 0;
};

}  // namespace llmd::http

#endif  // LLMD_HTTP_RECORDING_RESPONDER_H_
