// Download against TestHttpServer on loopback: resume, restarts, wrong and lying servers,
// limits, cancellation, the pre-check and the atomic rename. Every assertion is on structure:
// the bytes on disk, the server's request log, the returned Status; nothing waits on time.
#include "fetch/download.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "fetch/sha256.h"
#include "fetch/test_http_server.h"

namespace llmd::fetch {
namespace {

namespace fs = std::filesystem;
using testing::Mode;
using testing::Resource;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

class DownloadTest : public ::testing::Test {
 protected:
  static constexpr size_t kSize = 300 * 1024;
  static constexpr uint64_t kMargin = 4096;

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("llmd_fetch_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    payload_ = RandomBytes(kSize, 7);
    options_.free_space_margin = kMargin;
    options_.progress_interval_ms = 0;
    options_.free_bytes = [](const std::string&) -> Result<uint64_t> { return uint64_t{1} << 40; };
  }
  void TearDown() override { fs::remove_all(dir_); }

  void ServeModel(Mode mode = Mode::kNormal, size_t param = 0) {
    server_.Serve("/m.gguf", Resource{payload_, mode, param, ""});
  }
  DownloadRequest Request(bool with_sha = true) const {
    DownloadRequest r;
    r.url = server_.Url("/m.gguf");
    r.directory = dir_.string();
    r.file_name = "m.gguf";
    if (with_sha) r.sha256 = Sha256Hex(payload_);
    return r;
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WritePartial(std::string_view bytes) const {
    std::ofstream(dir_ / "m.gguf.partial", std::ios::binary) << bytes;
  }
  Status Fails(const DownloadRequest& r, const ProgressFn& progress = nullptr,
               const std::atomic<bool>* cancel = nullptr) {
    auto got = Download(r, options_, progress, cancel);
    EXPECT_FALSE(got.has_value());
    return got.has_value() ? Status() : got.error();
  }

  testing::TestHttpServer server_;
  fs::path dir_;
  std::string payload_;
  DownloadOptions options_;
};

TEST_F(DownloadTest, DownloadsVerifiesPrechecksAndRenamesIntoPlace) {
  ServeModel();
  std::vector<Progress> seen;
  int prechecks = 0;
  options_.precheck = [&](const std::string& path) {
    ++prechecks;
    EXPECT_EQ(path, (dir_ / "m.gguf.partial").string());  // before the rename
    EXPECT_FALSE(fs::exists(dir_ / "m.gguf"));
    EXPECT_EQ(fs::file_size(path), kSize);
    return Status::Ok();
  };
  auto r = Download(Request(), options_, [&](const Progress& p) {
    seen.push_back(p);
    return true;
  });
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(prechecks, 1);
  EXPECT_EQ(r->path, (dir_ / "m.gguf").string());
  EXPECT_EQ(r->bytes, kSize);
  EXPECT_EQ(r->sha256, Sha256Hex(payload_));
  EXPECT_EQ(r->resumed_from, 0u);
  EXPECT_FALSE(r->already_present);
  EXPECT_EQ(Read("m.gguf"), payload_);
  EXPECT_EQ(Entries(), std::vector<std::string>{"m.gguf"});
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().done_bytes, kSize);
  EXPECT_EQ(seen.back().total_bytes, static_cast<int64_t>(kSize));
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].done_bytes, seen[i - 1].done_bytes);
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].range, "");
}

TEST_F(DownloadTest, ADroppedConnectionResumesWithARangeToTheSameBytes) {
  constexpr size_t kCut = 100'000;
  ServeModel(Mode::kDropAfter, kCut);
  Status first = Fails(Request());
  EXPECT_EQ(first.code(), StatusCode::kUnavailable) << first.ToString();
  EXPECT_FALSE(fs::exists(dir_ / "m.gguf"));
  EXPECT_EQ(fs::file_size(dir_ / "m.gguf.partial"), kCut);  // kept for the resume

  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range, "bytes=" + std::to_string(kCut) + "-");
  EXPECT_EQ(r->resumed_from, kCut);
  EXPECT_EQ(r->sha256, Sha256Hex(payload_));  // the hash covers the resumed bytes too
  EXPECT_EQ(Read("m.gguf"), payload_);
  EXPECT_EQ(Entries(), std::vector<std::string>{"m.gguf"});
}

TEST_F(DownloadTest, WrongBytesAreRefusedNamingBothDigestsAndLeaveNothing) {
  ServeModel(Mode::kCorruptByte, 12345);
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  std::string bad = payload_;
  bad[12345] = static_cast<char>(bad[12345] ^ 0x5A);
  EXPECT_NE(s.message().find("sha256 mismatch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(Sha256Hex(payload_)), std::string::npos);
  EXPECT_NE(s.message().find(Sha256Hex(bad)), std::string::npos);
  EXPECT_TRUE(Entries().empty());
}

TEST_F(DownloadTest, AServerSendingFewerBytesThanAnnouncedIsAnErrorThenAResumeCompletes) {
  ServeModel(Mode::kLieShort, 1000);
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_FALSE(fs::exists(dir_ / "m.gguf"));
  // The honest server: the partial file is already whole, which a 416 says.
  ServeModel();
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range, "bytes=" + std::to_string(kSize) + "-");
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, AServerSendingMoreBytesThanAnnouncedNeverLeavesACutModel) {
  ServeModel(Mode::kLieLong, 1000);
  // With the digest: the cut file is refused and deleted.
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_TRUE(Entries().empty());
  // With the expected size: refused at the reply's head, before a byte is written.
  DownloadRequest sized = Request(false);
  sized.expected_bytes = kSize;
  s = Fails(sized);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("announces " + std::to_string(kSize - 1000)), std::string::npos);
  EXPECT_TRUE(Entries().empty());
}

TEST_F(DownloadTest, A200ToARangeRequestRestartsFromZero) {
  WritePartial(payload_.substr(0, 5000));
  ServeModel(Mode::kIgnoreRange);
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].range, "bytes=5000-");
  EXPECT_EQ(r->resumed_from, 0u);
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, AContentRangeFromElsewhereRestartsWithoutARange) {
  WritePartial(payload_.substr(0, 5000));
  ServeModel(Mode::kBadContentRange);
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].range, "bytes=5000-");
  EXPECT_EQ(log[1].range, "");
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, A416ForAPartialLongerThanTheFileRestarts) {
  WritePartial(payload_ + "tail");
  ServeModel();
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  auto log = server_.RequestsFor("/m.gguf");
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].range, "");
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, APartialOfOtherBytesFailsTheDigestAndIsDeleted) {
  WritePartial(RandomBytes(5000, 99));
  ServeModel();
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_TRUE(Entries().empty());
  auto r = Download(Request(), options_);  // the next pull starts clean
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
}

TEST_F(DownloadTest, TheSizeCapRefusesBeforeAnyByteIsWritten) {
  ServeModel();
  options_.max_bytes = kSize - 1;
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("over the limit"), std::string::npos) << s.message();
  EXPECT_TRUE(Entries().empty());
  // Known from metadata: refused before the request.
  DownloadRequest sized = Request();
  sized.expected_bytes = kSize;
  EXPECT_EQ(Fails(sized).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.RequestsFor("/m.gguf").size(), 1u);
  EXPECT_TRUE(Entries().empty());
}

TEST_F(DownloadTest, ABodyPastTheCapIsAbortedAndDeleted) {
  ServeModel(Mode::kNoLength);  // nothing to refuse it from before the body
  options_.max_bytes = kSize - 1;
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("passes the limit"), std::string::npos) << s.message();
  EXPECT_TRUE(Entries().empty());
  options_.max_bytes = kSize;  // exactly at the cap passes
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, AFreeSpaceShortfallIsRefusedBeforeAnyByteIsWritten) {
  ServeModel();
  options_.free_bytes = [](const std::string&) -> Result<uint64_t> { return kSize + kMargin - 1; };
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("not enough free space"), std::string::npos) << s.message();
  EXPECT_TRUE(Entries().empty());
  DownloadRequest sized = Request();
  sized.expected_bytes = kSize;
  EXPECT_EQ(Fails(sized).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.RequestsFor("/m.gguf").size(), 1u);  // the second never connected
}

TEST_F(DownloadTest, AResumeNeedsRoomOnlyForTheRemainingBytes) {
  constexpr size_t kHave = 100'000;
  WritePartial(payload_.substr(0, kHave));
  ServeModel();
  options_.free_bytes = [](const std::string&) -> Result<uint64_t> {
    return kSize - kHave + kMargin;
  };
  DownloadRequest sized = Request();
  sized.expected_bytes = kSize;
  auto r = Download(sized, options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->resumed_from, kHave);
}

TEST_F(DownloadTest, CancellingFromProgressKeepsThePartialForAResume) {
  constexpr size_t kGate = 64 * 1024;
  ServeModel(Mode::kGate, kGate);
  Status s = Fails(Request(), [&](const Progress& p) { return p.done_bytes < kGate; });
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(fs::file_size(dir_ / "m.gguf.partial"), kGate);
  server_.OpenGate();
  ServeModel();
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->resumed_from, kGate);
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, CancellingWithTheFlagStopsTheTransfer) {
  constexpr size_t kGate = 64 * 1024;
  ServeModel(Mode::kGate, kGate);
  std::atomic<bool> cancel{false};
  Status s = Fails(
      Request(),
      [&](const Progress& p) {
        if (p.done_bytes >= kGate) cancel = true;
        return true;
      },
      &cancel);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(fs::file_size(dir_ / "m.gguf.partial"), kGate);
  EXPECT_FALSE(fs::exists(dir_ / "m.gguf"));
}

TEST_F(DownloadTest, ARefusingPrecheckDeletesTheFile) {
  ServeModel();
  options_.precheck = [](const std::string&) { return CorruptionError("not a GGUF file"); };
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_NE(s.message().find("not a GGUF file"), std::string::npos) << s.message();
  EXPECT_TRUE(Entries().empty());
}

TEST_F(DownloadTest, AFilePresentWithTheDigestIsNotFetchedAgain) {
  std::ofstream(dir_ / "m.gguf", std::ios::binary) << payload_;
  ServeModel();
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(r->already_present);
  EXPECT_EQ(r->bytes, kSize);
  EXPECT_TRUE(server_.Requests().empty());
  // A different file under the name is replaced.
  std::ofstream(dir_ / "m.gguf", std::ios::binary) << "old";
  r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_FALSE(r->already_present);
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, AFifoUnderTheFinalNameIsReplacedNeverOpenedForReading) {
  ASSERT_EQ(::mkfifo((dir_ / "m.gguf").c_str(), 0644), 0);
  ServeModel();
  auto r = Download(Request(), options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_TRUE(fs::is_regular_file(dir_ / "m.gguf"));
  EXPECT_EQ(Read("m.gguf"), payload_);
}

TEST_F(DownloadTest, PolicyAndStatusErrors) {
  DownloadRequest r = Request();
  r.url = "http://example.com/m.gguf";
  EXPECT_EQ(Fails(r).code(), StatusCode::kInvalidArgument);
  r = Request();
  r.file_name = "../m.gguf";
  EXPECT_EQ(Fails(r).code(), StatusCode::kInvalidArgument);
  r = Request();
  r.sha256 = "abc";
  EXPECT_EQ(Fails(r).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(server_.Requests().empty());
  // 404: NotFound, nothing left.
  r = Request();
  r.url = server_.Url("/missing.gguf");
  EXPECT_EQ(Fails(r).code(), StatusCode::kNotFound);
  EXPECT_TRUE(Entries().empty());
  r.directory = (dir_ / "absent").string();
  EXPECT_EQ(Fails(r).code(), StatusCode::kNotFound);
}

TEST_F(DownloadTest, RedirectsAreFollowedOnlyToHttps) {
  server_.Serve("/hop", Resource{"", Mode::kRedirect, 0, server_.Url("/m.gguf")});
  ServeModel();
  DownloadRequest r = Request();
  r.url = server_.Url("/hop");
  Status s = Fails(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("not https"), std::string::npos) << s.message();
  EXPECT_TRUE(server_.RequestsFor("/m.gguf").empty());
  EXPECT_TRUE(Entries().empty());
}

TEST_F(DownloadTest, AnotherProcessHoldingThePartialIsRefused) {
  ServeModel();
  WritePartial("");
  int fd = ::open((dir_ / "m.gguf.partial").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // flock is per open file: this is "another process"
  Status s = Fails(Request());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("another process"), std::string::npos) << s.message();
  ::close(fd);
  EXPECT_TRUE(server_.Requests().empty());
}

}  // namespace
}  // namespace llmd::fetch
