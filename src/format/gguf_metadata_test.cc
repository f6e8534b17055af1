// ReadGgufMetadata: what a GGUF file says about its model (Ollama's /api/show and /api/tags
// report it), read by the pre-check's walk with its checks.
#include "format/gguf_metadata.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "format/gguf_precheck.h"
#include "tests/support/gguf_builder.h"

namespace llmd::format {
namespace {

using testing::GgufBuilder;

// Every kind of value, the chat template, a vocabulary and two F32 tensors of 128 and 10
// elements with their data.
std::string ModelWithEveryKind() {
  GgufBuilder b;
  b.Header(2, 16)
      .KvString("general.architecture", "qwen3")
      .KvU32("general.file_type", 7)
      .KvU32("qwen3.context_length", 40960)
      .KvString("tokenizer.chat_template", "{% if tools %}...{% endif %}<think>")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "b"})
      .KvI32Array("qwen3.layer_heads", {4, -4})
      .KvString("general.long", std::string(kMaxShownStringBytes + 1, 'x'))
      .KvString("general.just_shown", std::string(kMaxShownStringBytes, 'y'));
  b.Str("general.ratio").U32(GgufBuilder::kF32).U32(std::bit_cast<uint32_t>(0.5f));
  b.Str("general.epsilon").U32(GgufBuilder::kF64).U64(std::bit_cast<uint64_t>(1e-6));
  b.Str("general.flag").U32(GgufBuilder::kBool).Raw(std::string(1, '\x01'));
  b.Str("general.small").U32(GgufBuilder::kI8).Raw(std::string(1, '\xFE'));  // -2
  b.Str("general.wide").U32(GgufBuilder::kU16).Raw(std::string("\x34\x12", 2));
  b.Str("general.big").U32(GgufBuilder::kI64).U64(static_cast<uint64_t>(-5));
  b.Str("general.tokens_seen").U32(GgufBuilder::kU64).U64(1ull << 40);
  b.Str("general.many").U32(GgufBuilder::kArray).U32(GgufBuilder::kU8).U64(kMaxShownArray + 1)
      .Zeros(kMaxShownArray + 1);
  b.TensorInfo("w", {32, 4}, 0, 0).TensorInfo("b", {10}, 0, 512).Align().Zeros(552);
  return b.bytes();
}

Result<GgufMetadata> Read(const std::string& bytes) {
  return ReadGgufMetadata(*NewMemoryFile(bytes));
}

template <typename T>
T Get(const GgufMetadata& m, const std::string& key) {
  const GgufValue* v = m.Find(key);
  EXPECT_NE(v, nullptr) << key;
  if (v == nullptr || !std::holds_alternative<T>(*v)) {
    ADD_FAILURE() << key << " holds another kind of value";
    return T{};
  }
  return std::get<T>(*v);
}

TEST(GgufMetadata, ReadsWhatReportsShow) {
  auto m = Read(ModelWithEveryKind());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->architecture, "qwen3");
  EXPECT_EQ(m->file_type, 7u);
  EXPECT_EQ(m->parameter_count, 138u);
  EXPECT_EQ(m->chat_template, "{% if tools %}...{% endif %}<think>");
  EXPECT_EQ(m->Find("tokenizer.chat_template"), nullptr);  // it is chat_template
  ASSERT_EQ(m->values.size(), 15u);
  EXPECT_EQ(m->values.front().key, "general.architecture");  // in file order
  EXPECT_EQ(m->values.back().key, "general.many");

  EXPECT_EQ(Get<std::string>(*m, "general.architecture"), "qwen3");
  EXPECT_EQ(Get<uint64_t>(*m, "general.file_type"), 7u);
  EXPECT_EQ(Get<uint64_t>(*m, "qwen3.context_length"), 40960u);
  EXPECT_EQ(Get<float>(*m, "general.ratio"), 0.5f);
  EXPECT_EQ(Get<double>(*m, "general.epsilon"), 1e-6);
  EXPECT_EQ(Get<bool>(*m, "general.flag"), true);
  EXPECT_EQ(Get<int64_t>(*m, "general.small"), -2);
  EXPECT_EQ(Get<uint64_t>(*m, "general.wide"), 0x1234u);
  EXPECT_EQ(Get<int64_t>(*m, "general.big"), -5);
  EXPECT_EQ(Get<uint64_t>(*m, "general.tokens_seen"), 1ull << 40);
  EXPECT_EQ(Get<std::string>(*m, "general.just_shown").size(), kMaxShownStringBytes);
  const auto heads = Get<std::vector<GgufScalar>>(*m, "qwen3.layer_heads");
  EXPECT_EQ(heads, (std::vector<GgufScalar>{int64_t{4}, int64_t{-4}}));
  // Left out: a longer string, the vocabulary, a longer array.
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*m->Find("general.long")));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*m->Find("tokenizer.ggml.tokens")));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*m->Find("general.many")));
}

TEST(GgufMetadata, TheFileTypeIsAnUnsignedIntegerOrNone) {
  GgufBuilder b;
  b.Header(0, 2).KvString("general.architecture", "llama");
  b.Str("general.file_type").U32(GgufBuilder::kI32).U32(7);
  auto m = Read(b.bytes());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_FALSE(m->file_type.has_value());
  EXPECT_EQ(Get<int64_t>(*m, "general.file_type"), 7);
  EXPECT_EQ(m->parameter_count, 0u);
  EXPECT_TRUE(m->chat_template.empty());
}

TEST(GgufMetadata, ATemplateOverTheLimitIsLeftOut) {
  GgufBuilder b;
  b.Header(0, 2)
      .KvString("general.architecture", "llama")
      .KvString("tokenizer.chat_template", std::string(kMaxChatTemplateBytes + 1, 't'));
  auto m = Read(b.bytes());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_TRUE(m->chat_template.empty());
  EXPECT_EQ(m->Find("tokenizer.chat_template"), nullptr);
}

// The metadata is the pre-check's walk: it changes nothing the pre-check finds, and a file the
// pre-check refuses has no metadata, with the same error.
TEST(GgufMetadata, ChecksAsThePrecheckDoes) {
  const std::string good = ModelWithEveryKind();
  auto plain = PrecheckGguf(*NewMemoryFile(good));
  GgufMetadata m;
  auto with = PrecheckGguf(*NewMemoryFile(good), &m);
  ASSERT_TRUE(plain.has_value() && with.has_value());
  EXPECT_EQ(plain->data_offset, with->data_offset);
  EXPECT_EQ(plain->tensor_bytes, with->tensor_bytes);
  EXPECT_EQ(plain->vocab_size, with->vocab_size);
  EXPECT_EQ(plain->parameter_count, 138u);
  EXPECT_EQ(with->parameter_count, 138u);

  for (size_t n = 0; n < good.size(); n += (n < 4096 ? 1 : 61)) {  // cuts, data section too
    auto r = Read(good.substr(0, n));
    ASSERT_FALSE(r.has_value()) << "a file cut at " << n << " was read";
    EXPECT_EQ(r.error().code(), StatusCode::kCorruption);
    EXPECT_EQ(r.error().message(), PrecheckGguf(*NewMemoryFile(good.substr(0, n))).error().message());
  }
  EXPECT_FALSE(Read("GGML....").has_value());
  GgufBuilder nested;
  nested.Header(0, 1).Str("k").U32(GgufBuilder::kArray).U32(GgufBuilder::kArray).U64(1);
  EXPECT_FALSE(Read(nested.bytes()).has_value());
  GgufBuilder huge;
  huge.Header(0, 1).Str("k").U32(GgufBuilder::kArray).U32(GgufBuilder::kU64).U64(1ull << 60);
  EXPECT_FALSE(Read(huge.bytes()).has_value());
  GgufBuilder twice;
  twice.Header(0, 2).KvString("general.architecture", "llama").KvU32("general.architecture", 1);
  auto dup = Read(twice.bytes());
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message().find("duplicate key"), std::string::npos);
}

TEST(GgufMetadata, NamesFileTypesAsOllama) {
  EXPECT_EQ(FileTypeName(2), "Q4_0");
  EXPECT_EQ(FileTypeName(7), "Q8_0");
  EXPECT_EQ(FileTypeName(15), "Q4_K_M");
  EXPECT_EQ(FileTypeName(1), "F16");
  EXPECT_EQ(FileTypeName(32), "BF16");
  EXPECT_EQ(FileTypeName(99), "unknown");
  EXPECT_EQ(FileTypeName(std::nullopt), "unknown");
}

}  // namespace
}  // namespace llmd::format
