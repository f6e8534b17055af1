// PullRegistry: two pulls of one destination share one download (one GET of the body); a pull
// that leaves does not stop another's; a download everyone left stops and is resumed later.
// The server holds the body at a gate, so "at once" is a fact of the test, not a timing.
#include "fetch/pull_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include "fetch/sha256.h"
#include "fetch/test_http_server.h"

namespace llmd::fetch {
namespace {

namespace fs = std::filesystem;
using testing::Mode;
using testing::Resource;

constexpr auto kLiveness = std::chrono::seconds(60);
constexpr size_t kSize = 256 * 1024;
constexpr size_t kGate = 32 * 1024;

class PullRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("llmd_pulls_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::mt19937 rng(3);
    payload_.resize(kSize);
    for (char& c : payload_) c = static_cast<char>(rng());
    server_.Serve("/m.gguf", Resource{payload_, Mode::kGate, kGate, ""});
  }
  void TearDown() override { fs::remove_all(dir_); }

  static DownloadOptions Options() {
    DownloadOptions o;
    o.progress_interval_ms = 0;
    o.free_space_margin = 0;
    return o;
  }
  DownloadRequest Request() const {
    return DownloadRequest{server_.Url("/m.gguf"), dir_.string(), "m.gguf", Sha256Hex(payload_),
                           -1};
  }

  testing::TestHttpServer server_;
  fs::path dir_;
  std::string payload_;
};

TEST_F(PullRegistryTest, TwoPullsOfOneFileShareOneDownload) {
  PullRegistry registry(Options());
  auto first = std::async(std::launch::async, [&] { return registry.Pull(Request()); });
  ASSERT_TRUE(server_.WaitForGate());  // the first download is inside its body

  std::promise<void> joined;
  bool told = false;
  std::vector<Progress> seen;
  auto second = std::async(std::launch::async, [&] {
    // "dir/" names the same destination as "dir".
    DownloadRequest r = Request();
    r.directory += "/";
    return registry.Pull(r, [&](const Progress& p) {
      seen.push_back(p);
      if (!told) joined.set_value();
      told = true;
      return true;
    });
  });
  ASSERT_EQ(joined.get_future().wait_for(kLiveness), std::future_status::ready);
  EXPECT_EQ(registry.active(), 1u);
  server_.OpenGate();

  ASSERT_EQ(first.wait_for(kLiveness), std::future_status::ready);
  ASSERT_EQ(second.wait_for(kLiveness), std::future_status::ready);
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  EXPECT_EQ(a->sha256, Sha256Hex(payload_));
  EXPECT_EQ(b->path, a->path);
  EXPECT_EQ(server_.RequestsFor("/m.gguf").size(), 1u);  // one GET of the body
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done_bytes, kSize);  // the second saw the shared progress to the end
  EXPECT_EQ(registry.active(), 0u);
}

TEST_F(PullRegistryTest, OnePullLeavingDoesNotStopTheOther) {
  PullRegistry registry(Options());
  auto stays = std::async(std::launch::async, [&] { return registry.Pull(Request()); });
  ASSERT_TRUE(server_.WaitForGate());
  std::atomic<bool> cancel{false};
  auto leaves = std::async(std::launch::async, [&] {
    return registry.Pull(
        Request(),
        [&](const Progress&) {
          cancel = true;  // leave once joined
          return true;
        },
        &cancel);
  });
  ASSERT_EQ(leaves.wait_for(kLiveness), std::future_status::ready);
  auto left = leaves.get();
  ASSERT_FALSE(left.has_value());
  EXPECT_EQ(left.error().code(), StatusCode::kCancelled);
  server_.OpenGate();
  ASSERT_EQ(stays.wait_for(kLiveness), std::future_status::ready);
  auto r = stays.get();
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(server_.RequestsFor("/m.gguf").size(), 1u);
}

TEST_F(PullRegistryTest, ADownloadEveryoneLeftStopsAndTheNextPullResumesIt) {
  PullRegistry registry(Options());
  auto r = registry.Pull(Request(), [](const Progress& p) { return p.done_bytes < kGate; });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kCancelled);
  server_.Serve("/m.gguf", Resource{payload_, Mode::kNormal, 0, ""});
  // Waits for the abandoned download to wind down, then starts anew from its partial file.
  r = registry.Pull(Request());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->resumed_from, kGate);
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range, "bytes=" + std::to_string(kGate) + "-");
}

TEST_F(PullRegistryTest, JoiningFromAnotherSourceIsRefused) {
  PullRegistry registry(Options());
  auto first = std::async(std::launch::async, [&] { return registry.Pull(Request()); });
  ASSERT_TRUE(server_.WaitForGate());
  DownloadRequest other = Request();
  other.url = server_.Url("/elsewhere.gguf");
  auto r = registry.Pull(other);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  server_.OpenGate();
  ASSERT_EQ(first.wait_for(kLiveness), std::future_status::ready);
  EXPECT_TRUE(first.get().has_value());
}

}  // namespace
}  // namespace llmd::fetch
