// Model names: what Ollama accepts, and nothing that could leave a models directory.
#include "models/model_name.h"

#include <gtest/gtest.h>

#include <string>

namespace llmd::models {
namespace {

ModelName Parsed(std::string_view text) {
  auto name = ParseModelName(text);
  EXPECT_TRUE(name.has_value()) << text << ": " << name.error().ToString();
  return name.has_value() ? *name : ModelName{};
}

// The parse error's message; fails the test when `text` parses.
std::string Refusal(std::string_view text) {
  auto name = ParseModelName(text);
  EXPECT_FALSE(name.has_value()) << "'" << text << "' was accepted";
  if (name.has_value()) return "";
  EXPECT_EQ(name.error().code(), StatusCode::kInvalidArgument);
  return name.error().message();
}

TEST(ModelName, AcceptsOllamaNames) {
  ModelName plain = Parsed("qwen3");
  EXPECT_EQ(plain.name_space, "");
  EXPECT_EQ(plain.model, "qwen3");
  EXPECT_EQ(plain.tag, "latest");

  ModelName full = Parsed("library/qwen3:8b-q4_K_M");
  EXPECT_EQ(full.name_space, "library");
  EXPECT_EQ(full.model, "qwen3");
  EXPECT_EQ(full.tag, "8b-q4_K_M");
  EXPECT_EQ(full.ToString(), "library/qwen3:8b-q4_K_M");

  EXPECT_EQ(Parsed("llama3.2:3.2").ToString(), "llama3.2:3.2");
  EXPECT_EQ(Parsed("_x-y.z").model, "_x-y.z");
  EXPECT_EQ(Parsed("3b").model, "3b");
  EXPECT_EQ(Parsed("Qwen3-8B").model, "Qwen3-8B");  // case is kept
}

TEST(ModelName, LatestIsTheDefaultTag) {
  EXPECT_EQ(Parsed("qwen3:latest"), Parsed("qwen3"));
  EXPECT_EQ(Parsed("qwen3:latest").ToString(), "qwen3");
  EXPECT_EQ(Parsed("ns/qwen3:latest").ToString(), "ns/qwen3");
  EXPECT_NE(Parsed("qwen3:8b"), Parsed("qwen3"));
  auto canonical = CanonicalModelName("a/b:latest");
  ASSERT_TRUE(canonical.has_value());
  EXPECT_EQ(*canonical, "a/b");
  EXPECT_FALSE(CanonicalModelName("a/../b").has_value());
}

TEST(ModelName, FileNameIsBelowTheDirectory) {
  EXPECT_EQ(Parsed("qwen3").FileName(".gguf"), "qwen3.gguf");
  EXPECT_EQ(Parsed("qwen3:latest").FileName(".modelfile"), "qwen3.modelfile");
  EXPECT_EQ(Parsed("ns/qwen3:8b").FileName(".gguf"), "ns/qwen3:8b.gguf");
}

TEST(ModelName, RefusesTraversal) {
  for (const char* text : {"..", "../x", "a/../b", "a/..", "ns/..", "x..y", "a:..", "..:t"}) {
    EXPECT_NE(Refusal(text).find("contains '..'"), std::string::npos) << text;
  }
  // A lone dot or a leading dot is no name either (hidden files, "./x").
  EXPECT_NE(Refusal(".").find("starting with '.'"), std::string::npos);
  EXPECT_NE(Refusal(".hidden").find("starting with '.'"), std::string::npos);
  EXPECT_NE(Refusal("./x").find("starting with '.'"), std::string::npos);
  EXPECT_NE(Refusal("a\\b").find("'\\'"), std::string::npos);
}

TEST(ModelName, RefusesAbsolutePaths) {
  EXPECT_EQ(Refusal("/etc/passwd"), "model name '/etc/passwd' is an absolute path, not a name");
  EXPECT_NE(Refusal("/x").find("absolute path"), std::string::npos);
}

TEST(ModelName, RefusesEmptyParts) {
  EXPECT_EQ(Refusal(""), "model name is empty");
  EXPECT_EQ(Refusal("ns/"), "model name 'ns/' has an empty name");
  EXPECT_EQ(Refusal(":8b"), "model name ':8b' has an empty name");
  EXPECT_EQ(Refusal("m:"), "model name 'm:' has an empty tag");
  EXPECT_EQ(Refusal("ns/:t"), "model name 'ns/:t' has an empty name");
}

TEST(ModelName, RefusesMoreThanOneSeparator) {
  EXPECT_NE(Refusal("a/b/c").find("more than one '/'"), std::string::npos);
  EXPECT_NE(Refusal("registry.ollama.ai/library/qwen3").find("more than one '/'"),
            std::string::npos);
  EXPECT_NE(Refusal("a:b:c").find("more than one ':'"), std::string::npos);
  EXPECT_NE(Refusal("a:b/c").find("':' in its namespace"), std::string::npos);
}

TEST(ModelName, RefusesOtherBytes) {
  EXPECT_NE(Refusal("a b").find("has ' ' in its name"), std::string::npos);
  EXPECT_NE(Refusal("a;rm").find("';'"), std::string::npos);
  EXPECT_NE(Refusal(std::string("a\0b", 3)).find("byte 0"), std::string::npos);
  EXPECT_NE(Refusal("caf\xC3\xA9").find("byte 195"), std::string::npos);
  EXPECT_NE(Refusal("-x").find("starting with '-'"), std::string::npos);
  EXPECT_NE(Refusal("x:-t").find("tag starting with '-'"), std::string::npos);
  // Ollama allows no '.' in a namespace.
  EXPECT_NE(Refusal("a.b/c").find("'.' in its namespace"), std::string::npos);
}

TEST(ModelName, LengthLimits) {
  const std::string longest(kMaxModelNamePartBytes, 'm');
  const std::string too_long(kMaxModelNamePartBytes + 1, 'm');
  EXPECT_EQ(Parsed(longest + "/" + longest + ":" + longest).model, longest);
  EXPECT_NE(Refusal(too_long).find("name longer than 80 bytes"), std::string::npos);
  EXPECT_NE(Refusal("m:" + too_long).find("tag longer than 80 bytes"), std::string::npos);
  EXPECT_NE(Refusal(too_long + "/m").find("namespace longer than 80 bytes"), std::string::npos);
}

TEST(ModelName, Namespaces) {
  EXPECT_TRUE(IsValidNamespace("library"));
  EXPECT_TRUE(IsValidNamespace("my-org_2"));
  EXPECT_FALSE(IsValidNamespace(""));
  EXPECT_FALSE(IsValidNamespace(".."));
  EXPECT_FALSE(IsValidNamespace("a.b"));
  EXPECT_FALSE(IsValidNamespace("a/b"));
  EXPECT_FALSE(IsValidNamespace("a:b"));
}

}  // namespace
}  // namespace llmd::models
