// `hf.co/owner/repo:quant` end to end against a hub served from loopback: the listing is
// fetched, the quantization picked, and the download held to the listing's lfs.oid and size.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fetch/download.h"
#include "fetch/pull_plan.h"
#include "fetch/sha256.h"
#include "fetch/test_http_server.h"

namespace llmd::fetch {
namespace {

namespace fs = std::filesystem;
using testing::Mode;
using testing::Resource;

constexpr char kListing[] = "/api/models/acme/tiny-GGUF/tree/main";

class HubPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("llmd_hub_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    q4_ = std::string(70'000, 'q') + "four";
    q8_ = std::string(90'000, 'e') + "eight";
    hub_.base_url = server_.base_url();
    options_.progress_interval_ms = 0;
    ServeListing(Sha256Hex(q4_));
    server_.Serve("/acme/tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf",
                  Resource{q4_, Mode::kNormal, 0, ""});
    server_.Serve("/acme/tiny-GGUF/resolve/main/q8/tiny-Q8_0.gguf",
                  Resource{q8_, Mode::kNormal, 0, ""});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The hub's tree listing, with `q4_oid` as the Q4_K_M file's lfs.oid.
  void ServeListing(const std::string& q4_oid) {
    auto entry = [](const std::string& path, size_t size, const std::string& oid) {
      return R"({"type":"file","oid":"0123","size":)" + std::to_string(size) + R"(,"path":")" +
             path + R"(","lfs":{"oid":")" + oid + R"(","size":)" + std::to_string(size) +
             R"(,"pointerSize":134}})";
    };
    std::string json = "[";
    json += R"({"type":"file","oid":"9","size":12,"path":"README.md"},)";
    json += R"({"type":"directory","oid":"8","size":0,"path":"q8"},)";
    json += entry("tiny-Q4_K_M.gguf", q4_.size(), q4_oid) + ",";
    json += entry("tiny-Q4_K_S.gguf", 5, std::string(64, 'b')) + ",";
    json += entry("q8/tiny-Q8_0.gguf", q8_.size(), Sha256Hex(q8_)) + "]";
    server_.Serve(kListing, Resource{json, Mode::kNormal, 0, ""});
  }
  PullTarget Target() const { return PullTarget{dir_.string(), "", ""}; }
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  testing::TestHttpServer server_;
  fs::path dir_;
  std::string q4_, q8_;
  HubOptions hub_;
  DownloadOptions options_;
};

TEST_F(HubPullTest, AQuantizationResolvesToTheFileAndItsDigest) {
  auto plan = PlanPull("hf.co/acme/tiny-GGUF:q4_k_m", Target(), hub_);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->url, server_.Url("/acme/tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf"));
  EXPECT_EQ(plan->file_name, "tiny-Q4_K_M.gguf");
  EXPECT_EQ(plan->sha256, Sha256Hex(q4_));
  EXPECT_EQ(plan->expected_bytes, static_cast<int64_t>(q4_.size()));
  auto r = Download(*plan, options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("tiny-Q4_K_M.gguf"), q4_);
  ASSERT_EQ(server_.RequestsFor(kListing).size(), 1u);
}

TEST_F(HubPullTest, NoTagIsOllamasDefaultAndAFileInAFolderKeepsItsBaseName) {
  auto plan = PlanPull("hf.co/acme/tiny-GGUF", Target(), hub_);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->file_name, "tiny-Q4_K_M.gguf");
  plan = PlanPull("huggingface.co/acme/tiny-GGUF:Q8_0", Target(), hub_);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->file_name, "tiny-Q8_0.gguf");
  auto r = Download(*plan, options_);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Read("tiny-Q8_0.gguf"), q8_);
}

TEST_F(HubPullTest, AmbiguityIsRefusedWithTheCandidates) {
  auto plan = PlanPull("hf.co/acme/tiny-GGUF:Q4_K", Target(), hub_);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.error().message().find("tiny-Q4_K_M.gguf, tiny-Q4_K_S.gguf"), std::string::npos)
      << plan.error().message();
  plan = PlanPull("hf.co/acme/tiny-GGUF:IQ2_XS", Target(), hub_);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kNotFound);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(HubPullTest, BytesThatAreNotTheListedDigestAreRefused) {
  ServeListing(Sha256Hex("some other file"));
  auto plan = PlanPull("hf.co/acme/tiny-GGUF:Q4_K_M", Target(), hub_);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  auto r = Download(*plan, options_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption);
  EXPECT_NE(r.error().message().find(Sha256Hex("some other file")), std::string::npos);
  EXPECT_NE(r.error().message().find(Sha256Hex(q4_)), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(HubPullTest, TheCallersDigestMustAgreeWithTheHubs) {
  PullTarget t = Target();
  t.sha256 = std::string(64, '0');
  auto plan = PlanPull("hf.co/acme/tiny-GGUF:Q4_K_M", t, hub_);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kInvalidArgument);
}

TEST_F(HubPullTest, AMissingRepositoryIsNotFound) {
  auto plan = PlanPull("hf.co/acme/absent", Target(), hub_);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().code(), StatusCode::kNotFound);
  EXPECT_NE(plan.error().message().find("listing hf.co/acme/absent"), std::string::npos)
      << plan.error().message();
}

TEST_F(HubPullTest, UrlsAreNamedFromTheirPath) {
  auto plan = PlanPull(server_.Url("/files/x-Q4_0.gguf?download=true"), Target(), hub_);
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->file_name, "x-Q4_0.gguf");
  EXPECT_EQ(plan->sha256, "");
  EXPECT_FALSE(PlanPull(server_.Url("/"), Target(), hub_).has_value());  // no name to take
  EXPECT_FALSE(PlanPull("http://example.com/x.gguf", Target(), hub_).has_value());
}

}  // namespace
}  // namespace llmd::fetch
