// The pure parts of src/fetch: SHA-256, the URL policy, Content-Range, pull sources, the hub
// listing and the choice of a GGUF in it, file names.
#include <gtest/gtest.h>

#include "fetch/content_range.h"
#include "fetch/hub_tree.h"
#include "fetch/partial_file.h"
#include "fetch/pull_source.h"
#include "fetch/sha256.h"
#include "fetch/url_policy.h"

namespace llmd::fetch {
namespace {

TEST(Sha256, KnownVectorsAndIncrementalUpdates) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("a"));  // a digest does not end the hash
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
  h.Reset();
  EXPECT_EQ(h.HexDigest(), Sha256Hex(""));
}

TEST(Sha256, NormalizesDigestsAndRefusesOthers) {
  const std::string upper =
      "SHA256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
  EXPECT_FALSE(NormalizeSha256(upper).has_value());  // the prefix is lowercase, as Ollama writes it
  auto n =
      NormalizeSha256("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, Sha256Hex("abc"));
  EXPECT_FALSE(NormalizeSha256("abc").has_value());
  EXPECT_FALSE(NormalizeSha256(std::string(64, 'g')).has_value());
}

TEST(UrlPolicy, HttpsAnywhereHttpOnlyToLoopback) {
  EXPECT_TRUE(CheckFetchUrl("https://huggingface.co/a/b/resolve/main/x.gguf").has_value());
  EXPECT_TRUE(CheckFetchUrl("http://127.0.0.1:8080/x.gguf").has_value());
  EXPECT_TRUE(CheckFetchUrl("http://[::1]:8080/x.gguf").has_value());
  EXPECT_TRUE(CheckFetchUrl("http://LOCALHOST/x.gguf").has_value());
  auto parts = CheckFetchUrl("http://[::1]:9/a/b.gguf?x=1");
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->host, "::1");
  EXPECT_EQ(parts->path, "/a/b.gguf");

  auto refused = [](const char* url) {
    auto r = CheckFetchUrl(url);
    EXPECT_FALSE(r.has_value()) << url;
    if (!r.has_value()) {
      EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << url;
    }
    return r.has_value() ? std::string() : r.error().message();
  };
  EXPECT_NE(refused("http://example.com/x.gguf").find("only to a loopback host"),
            std::string::npos);
  EXPECT_NE(refused("http://127.0.0.2/x.gguf").find("loopback"), std::string::npos);
  EXPECT_NE(refused("http://127.0.0.1.example.com/x").find("loopback"), std::string::npos);
  EXPECT_NE(refused("ftp://example.com/x.gguf").find("only https"), std::string::npos);
  EXPECT_NE(refused("file:///etc/passwd").find("refusing"), std::string::npos);
  EXPECT_NE(refused("huggingface.co/x").find("not a valid absolute URL"), std::string::npos);
  EXPECT_NE(refused("https://user:pw@example.com/x").find("credentials"), std::string::npos);
}

TEST(ContentRange, ParsesRangesAndLengths) {
  auto r = ParseContentRange("bytes 100-199/200");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->has_range);
  EXPECT_EQ(r->first, 100u);
  EXPECT_EQ(r->last, 199u);
  EXPECT_EQ(r->complete, 200);
  r = ParseContentRange("bytes */4096");
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->has_range);
  EXPECT_EQ(r->complete, 4096);
  r = ParseContentRange("bytes 0-9/*");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->complete, -1);
  for (const char* bad : {"", "bytes", "items 0-1/2", "bytes 5-4/10", "bytes 0-10/10", "bytes */*",
                          "bytes 1-2/3x", "bytes -1-2/3", "bytes 99999999999999999999-1/2"}) {
    EXPECT_FALSE(ParseContentRange(bad).has_value()) << bad;
  }
}

TEST(PullSource, UrlsAndHubReferences) {
  auto u = ParsePullSource("https://example.com/m.gguf");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->kind, PullSource::Kind::kUrl);
  auto h = ParsePullSource("hf.co/bartowski/Qwen3-0.6B-GGUF:Q4_K_M");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->kind, PullSource::Kind::kHub);
  EXPECT_EQ(h->hub.owner, "bartowski");
  EXPECT_EQ(h->hub.repo, "Qwen3-0.6B-GGUF");
  EXPECT_EQ(h->hub.tag, "Q4_K_M");
  EXPECT_EQ(HubRefName(h->hub), "hf.co/bartowski/Qwen3-0.6B-GGUF:Q4_K_M");
  h = ParsePullSource("huggingface.co/a/b");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->hub.tag, "");
  h = ParsePullSource("hf.co/a/b:sub/dir/m-Q8_0.gguf");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->hub.tag, "sub/dir/m-Q8_0.gguf");
  for (const char* bad :
       {"qwen3", "hf.co/a", "hf.co/a:b/c", "hf.co/../b", "hf.co/a/b?x=1", "hf.co/a/b#c",
        "hf.co/a/.b", "hf.co/a/b:", "hf.co/a/b:../x.gguf", "hf.co/a/b:x y", "hf.co/a b/c"}) {
    auto r = ParsePullSource(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r.has_value()) {
      EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(FileName, PlainNamesOnly) {
  EXPECT_TRUE(CheckFileName("Qwen3-0.6B-Q4_K_M.gguf").ok());
  for (const char* bad : {"", ".", "..", ".hidden", "a/b", "x.gguf\n"}) {
    EXPECT_EQ(CheckFileName(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(CheckFileName(std::string(201, 'a')).ok());
}

constexpr char kTree[] = R"([
  {"type":"directory","oid":"x","size":0,"path":"sub"},
  {"type":"file","oid":"1","size":10,"path":"README.md"},
  {"type":"file","oid":"2","size":7,"path":"m-Q4_K_M.gguf",
   "lfs":{"oid":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","size":1000,"pointerSize":130}},
  {"type":"file","oid":"3","size":7,"path":"m-Q4_K_S.gguf",
   "lfs":{"oid":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","size":900}},
  {"type":"file","oid":"4","size":7,"path":"m-Q4_0.gguf",
   "lfs":{"oid":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc","size":800}},
  {"type":"file","oid":"5","size":7,"path":"m-Q4_0_4_4.gguf",
   "lfs":{"oid":"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd","size":800}},
  {"type":"file","oid":"6","size":7,"path":"mmproj-m-f16.gguf",
   "lfs":{"oid":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee","size":5}},
  {"type":"file","oid":"7","size":7,"path":"big/m-Q8_0-00001-of-00002.gguf",
   "lfs":{"oid":"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff","size":5}},
  {"type":"file","oid":"8","size":7,"path":"big/m-Q8_0-00002-of-00002.gguf",
   "lfs":{"oid":"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff","size":5}},
  {"type":"file","oid":"9","size":33,"path":"sub/m-F16.gguf"}
])";

TEST(HubTree, ReadsFilesWithTheirLfsDigestAndSize) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.has_value()) << files.error().ToString();
  ASSERT_EQ(files->size(), 9u);  // the directory is skipped
  EXPECT_EQ((*files)[1].path, "m-Q4_K_M.gguf");
  EXPECT_EQ((*files)[1].sha256, std::string(64, 'a'));  // lowercased
  EXPECT_EQ((*files)[1].size, 1000u);                   // lfs.size: the file, not the pointer
  EXPECT_EQ((*files)[8].sha256, "");                    // not in LFS
  EXPECT_EQ((*files)[8].size, 33u);
}

TEST(HubTree, RefusesMalformedListings) {
  for (const char* bad :
       {"", "{}", "[1]", "[{\"type\":\"file\"}]", R"([{"type":"file","path":"a","size":-1}])",
        R"([{"type":"file","path":"a","lfs":{"oid":"zz"}}])",
        R"([{"type":"file","path":"a","lfs":{"oid":7}}])", "[{"}) {
    auto r = ParseHubTree(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r.has_value()) {
      EXPECT_EQ(r.error().code(), StatusCode::kCorruption) << bad;
    }
  }
}

TEST(HubTree, PicksByQuantizationIgnoringCase) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.has_value());
  auto pick = [&](const char* tag) { return PickGguf(*files, tag, "o/r"); };
  ASSERT_TRUE(pick("q4_k_m").has_value());
  EXPECT_EQ(pick("q4_k_m")->path, "m-Q4_K_M.gguf");
  EXPECT_EQ(pick("")->path, "m-Q4_K_M.gguf");  // Ollama's default
  EXPECT_EQ(pick("latest")->path, "m-Q4_K_M.gguf");
  EXPECT_EQ(pick("f16")->path, "sub/m-F16.gguf");  // the projector is no candidate
  // "Q4_0" is a whole word in one name only.
  ASSERT_TRUE(pick("Q4_0").has_value());
  EXPECT_EQ(pick("Q4_0")->path, "m-Q4_0.gguf");
  // By file name: the path, or a base name.
  EXPECT_EQ(pick("m-Q4_K_S.gguf")->path, "m-Q4_K_S.gguf");
  EXPECT_EQ(pick("m-F16.gguf")->path, "sub/m-F16.gguf");
}

TEST(HubTree, RefusesAmbiguityListingTheCandidates) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.has_value());
  auto r = PickGguf(*files, "Q4_K", "o/r");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(r.error().message().find("m-Q4_K_M.gguf, m-Q4_K_S.gguf"), std::string::npos);
  r = PickGguf(*files, "Q5_K_M", "o/r");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
  EXPECT_NE(r.error().message().find("m-Q4_K_M.gguf"), std::string::npos);  // what there is
  r = PickGguf(*files, "Q8_0", "o/r");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnimplemented);  // a split GGUF
  r = PickGguf(*files, "nope.gguf", "o/r");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace llmd::fetch
