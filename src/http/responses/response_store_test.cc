#include "http/responses/response_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "http/responses/response_owner.h"

namespace llmd::http {
namespace {

StoredResponse Make(const std::string& id, const std::string& owner, int64_t created_at_ms = 1000,
                    const std::string& text = "hi") {
  return {id, owner, created_at_ms, R"({"id":")" + id + R"(","object":"response"})",
          R"([{"type":"message","role":"user","content":")" + text + R"("}])"};
}

// A temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/response_store_testXXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)!std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The store's clock for tests that do not move it: every response made at 1000 is young.
int64_t Fixed() { return 2000; }

bool Exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(ResponseStore, OnlyTheOwnerSeesOrDeletesAResponse) {
  ResponseStore store({.now_ms = Fixed});
  ASSERT_TRUE(store.Put(Make("resp_a", "uid:1000")).ok());
  auto mine = store.Get("resp_a", "uid:1000");
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->items_json, R"([{"type":"message","role":"user","content":"hi"}])");
  EXPECT_FALSE(store.Get("resp_a", "uid:1001").has_value());
  EXPECT_FALSE(store.Get("resp_a", "uid:1000 key:00").has_value()) << "a key holder of the same uid is another owner";
  EXPECT_FALSE(store.Get("resp_a", "").has_value());
  EXPECT_FALSE(store.Erase("resp_a", "uid:1001"));
  EXPECT_TRUE(store.Get("resp_a", "uid:1000").has_value()) << "a stranger's DELETE removed nothing";
  EXPECT_TRUE(store.Erase("resp_a", "uid:1000"));
  EXPECT_FALSE(store.Get("resp_a", "uid:1000").has_value());
  EXPECT_FALSE(store.Erase("resp_a", "uid:1000"));
  EXPECT_EQ(store.totals().count, 0u);
  EXPECT_EQ(store.totals().bytes, 0u);
}

TEST(ResponseStore, OwnersAreUidsAndKeyHashesNeverKeys) {
  Peer unix_peer{false, 1000, 1000, 1, true, true};
  Peer unknown_tcp{true, 0, 0, 0, false, false};
  const std::string key = "secret-key-0123456789";
  EXPECT_EQ(ResponseOwner(unix_peer, false, key), "uid:1000");
  const std::string with_key = ResponseOwner(unix_peer, true, key);
  EXPECT_TRUE(with_key.starts_with("uid:1000 key:")) << with_key;
  EXPECT_EQ(with_key.find(key), std::string::npos);
  EXPECT_EQ(with_key.size(), std::string("uid:1000 key:").size() + 32);
  EXPECT_NE(ResponseOwner(unix_peer, true, "another-key-0123456789"), with_key);
  EXPECT_TRUE(ResponseOwner(unknown_tcp, true, key).starts_with("key:"));
  EXPECT_EQ(ResponseOwner(unknown_tcp, false, key), "");
}

TEST(ResponseStore, DropsTheLeastRecentlyUsedBeyondTheCount) {
  ResponseStore store({.max_responses = 2, .now_ms = Fixed});
  ASSERT_TRUE(store.Put(Make("resp_a", "o")).ok());
  ASSERT_TRUE(store.Put(Make("resp_b", "o")).ok());
  ASSERT_TRUE(store.Get("resp_a", "o").has_value());  // a is now the more recently used
  ASSERT_TRUE(store.Put(Make("resp_c", "o")).ok());
  EXPECT_TRUE(store.Get("resp_a", "o").has_value());
  EXPECT_FALSE(store.Get("resp_b", "o").has_value());
  EXPECT_TRUE(store.Get("resp_c", "o").has_value());
  EXPECT_EQ(store.totals().count, 2u);
}

TEST(ResponseStore, DropsTheLeastRecentlyUsedBeyondTheBytes) {
  const uint64_t one = Make("resp_a", "o").bytes();
  ResponseStore store({.max_bytes = 2 * one + one / 2, .now_ms = Fixed});
  ASSERT_TRUE(store.Put(Make("resp_a", "o")).ok());
  ASSERT_TRUE(store.Put(Make("resp_b", "o")).ok());
  EXPECT_EQ(store.totals().bytes, 2 * one);
  ASSERT_TRUE(store.Put(Make("resp_c", "o")).ok());
  EXPECT_FALSE(store.Get("resp_a", "o").has_value());
  EXPECT_EQ(store.totals().count, 2u);
  EXPECT_EQ(store.totals().bytes, 2 * one);
  // One response over the whole limit is refused, naming the limit; nothing is dropped for it.
  Status big = store.Put(Make("resp_big", "o", 1000, std::string(3 * one, 'x')));
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("responses_max_mb"), std::string::npos) << big.message();
  EXPECT_EQ(store.totals().count, 2u);
}

TEST(ResponseStore, ReplacingAnIdCountsItsBytesOnce) {
  ResponseStore store({.now_ms = Fixed});
  ASSERT_TRUE(store.Put(Make("resp_a", "o")).ok());
  ASSERT_TRUE(store.Put(Make("resp_a", "o", 1000, "longer text")).ok());
  EXPECT_EQ(store.totals().count, 1u);
  EXPECT_EQ(store.totals().bytes, Make("resp_a", "o", 1000, "longer text").bytes());
}

TEST(ResponseStore, ExpiresAtTheTtlFromCreation) {
  std::atomic<int64_t> now{10'000};
  ResponseStore store({.ttl_ms = 5'000, .now_ms = [&] { return now.load(); }});
  ASSERT_TRUE(store.Put(Make("resp_a", "o", 10'000)).ok());
  now = 14'999;
  EXPECT_TRUE(store.Get("resp_a", "o").has_value()) << "use does not extend its life, but it is still young";
  EXPECT_EQ(store.totals().count, 1u);
  now = 15'000;
  EXPECT_FALSE(store.Get("resp_a", "o").has_value());
  EXPECT_EQ(store.totals().count, 0u);
  EXPECT_EQ(store.totals().bytes, 0u);
}

TEST(ResponseStore, RefusesIdsThatAreNotFileNames) {
  ResponseStore store({.now_ms = Fixed});
  for (const char* id : {"resp_", "resp_../x", "resp_a/b", "../resp_a", "x_abc", "resp_a.json", ""}) {
    EXPECT_EQ(store.Put(Make(id, "o")).code(), StatusCode::kInvalidArgument) << id;
  }
  EXPECT_TRUE(IsValidResponseId("resp_0123456789abcdef"));
  EXPECT_FALSE(IsValidResponseId("resp_" + std::string(60, 'a')));
}

TEST(ResponseStore, StoringOffKeepsNothing) {
  ResponseStore store({.max_responses = 0, .now_ms = Fixed});
  EXPECT_FALSE(store.enabled());
  EXPECT_EQ(store.Put(Make("resp_a", "o")).code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(store.Get("resp_a", "o").has_value());
}

TEST(ResponseStore, SurvivesARestartThroughItsDirectory) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/responses";
  {
    ResponseStore store({.dir = dir, .now_ms = [] { return int64_t{2000}; }});
    ASSERT_TRUE(store.Put(Make("resp_a", "uid:7", 1000)).ok());
    ASSERT_TRUE(store.Put(Make("resp_b", "uid:8", 1500)).ok());
    ASSERT_TRUE(store.Put(Make("resp_gone", "uid:7", 1500)).ok());
    ASSERT_TRUE(store.Erase("resp_gone", "uid:7"));
  }
  struct stat st{};
  ASSERT_EQ(::stat((dir + "/resp_a.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "files hold conversations: owner only";
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(Exists(dir + "/resp_gone.json")) << "DELETE removes the file";

  ResponseStore again({.dir = dir, .now_ms = [] { return int64_t{3000}; }});
  auto a = again.Get("resp_a", "uid:7");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->response_json, Make("resp_a", "uid:7").response_json);
  EXPECT_EQ(a->items_json, Make("resp_a", "uid:7").items_json);
  EXPECT_EQ(a->created_at_ms, 1000);
  EXPECT_FALSE(again.Get("resp_a", "uid:8").has_value()) << "the owner survives the restart too";
  EXPECT_TRUE(again.Get("resp_b", "uid:8").has_value());
  EXPECT_FALSE(again.Get("resp_gone", "uid:7").has_value());
  EXPECT_EQ(again.totals().count, 2u);
}

TEST(ResponseStore, LoadingDropsExpiredFilesAndKeepsTheNewestWithinTheLimits) {
  TempDir tmp;
  {
    ResponseStore store({.dir = tmp.path(), .now_ms = [] { return int64_t{1000}; }});
    ASSERT_TRUE(store.Put(Make("resp_old", "o", 1000)).ok());
    ASSERT_TRUE(store.Put(Make("resp_mid", "o", 5000)).ok());
    ASSERT_TRUE(store.Put(Make("resp_new", "o", 6000)).ok());
  }
  ResponseStore store({.max_responses = 1, .ttl_ms = 4500, .dir = tmp.path(), .now_ms = [] { return int64_t{9000}; }});
  EXPECT_FALSE(Exists(tmp.path() + "/resp_old.json")) << "expired while the daemon was down";
  EXPECT_FALSE(Exists(tmp.path() + "/resp_mid.json")) << "beyond the count: the oldest goes";
  EXPECT_TRUE(store.Get("resp_new", "o").has_value());
  EXPECT_EQ(store.totals().count, 1u);
}

TEST(ResponseStore, BadFilesAreSkippedWithALogLineAndLeftAlone) {
  TempDir tmp;
  {
    ResponseStore store({.dir = tmp.path(), .now_ms = [] { return int64_t{1000}; }});
    ASSERT_TRUE(store.Put(Make("resp_good", "o", 1000)).ok());
  }
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(tmp.path() + "/" + name, std::ios::binary) << text;
  };
  write("resp_garbage.json", "\x01\x02not json");
  write("resp_truncated.json", R"({"version":1,"id":"resp_truncated","owner":"o","created_at_ms":1,"resp)");
  write("resp_otherid.json", R"({"version":1,"id":"resp_good","owner":"o","created_at_ms":1000,"response":{},"items":[]})");
  write("resp_noowner.json", R"({"version":1,"id":"resp_noowner","owner":"","created_at_ms":1000,"response":{},"items":[]})");
  write("resp_version.json", R"({"version":9,"id":"resp_version","owner":"o","created_at_ms":1000,"response":{},"items":[]})");
  write("resp_items.json", R"({"version":1,"id":"resp_items","owner":"o","created_at_ms":1000,"response":{},"items":{}})");
  write("not..an id.json", "{}");
  write("resp_good.json.tmp.123", "partial");  // a write cut short: not a response file
  ASSERT_EQ(::mkdir((tmp.path() + "/resp_dir.json").c_str(), 0700), 0);

  ::testing::internal::CaptureStderr();
  ResponseStore store({.dir = tmp.path(), .now_ms = [] { return int64_t{2000}; }});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(store.Get("resp_good", "o").has_value());
  EXPECT_EQ(store.totals().count, 1u);
  for (const char* name : {"resp_garbage", "resp_truncated", "resp_otherid", "resp_noowner", "resp_version",
                           "resp_items", "not..an id", "resp_dir"}) {
    EXPECT_NE(log.find(std::string(name) + ".json"), std::string::npos) << name << " is not in the log:\n" << log;
    EXPECT_TRUE(Exists(tmp.path() + "/" + name + ".json")) << name << ": what is not ours is left alone";
  }
  EXPECT_NE(log.find("stored_response_skipped"), std::string::npos) << log;
  EXPECT_EQ(log.find("resp_good.json.tmp"), std::string::npos) << log;
}

TEST(ResponseStore, ManyThreadsPutGetAndEraseAtOnce) {
  ResponseStore store({.max_responses = 50, .now_ms = Fixed});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&store, t] {
      const std::string owner = "uid:" + std::to_string(t);
      for (int i = 0; i < 200; ++i) {
        const std::string id = "resp_" + std::to_string(t) + "_" + std::to_string(i);
        ASSERT_TRUE(store.Put(Make(id, owner)).ok());
        (void)store.Get(id, owner);
        if (i % 3 == 0) (void)store.Erase(id, owner);
        (void)store.totals();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(store.totals().count, 50u);
}

}  // namespace
}  // namespace llmd::http
