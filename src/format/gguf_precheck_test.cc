// Crafted GGUF files for every class in robustness-tests.md items 43-45: each must give a
// clear Corruption error, never an abort, an over-allocation or a read past the end.
#include "format/gguf_precheck.h"

#include <gtest/gtest.h>

#include "tests/support/gguf_builder.h"

namespace llmd::format {
namespace {

using testing::GgufBuilder;
using testing::MinimalValidGguf;

Result<GgufSummary> Check(const std::string& bytes) {
  return PrecheckGguf(*NewMemoryFile(bytes));
}

// Expects a Corruption error whose message contains `needle`.
void ExpectRejected(const std::string& bytes, const std::string& needle) {
  auto r = Check(bytes);
  ASSERT_FALSE(r.has_value()) << "accepted a file that should fail with: " << needle;
  EXPECT_EQ(r.error().code(), StatusCode::kCorruption);
  EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
}

TEST(GgufPrecheck, AcceptsAMinimalValidFile) {
  auto r = Check(MinimalValidGguf().bytes());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->architecture, "llama");
  EXPECT_EQ(r->n_tensors, 1u);
  EXPECT_EQ(r->vocab_size, 4u);
  EXPECT_EQ(r->tensor_bytes, 128u);
  EXPECT_EQ(r->data_offset % 32, 0u);
}

TEST(GgufPrecheck, SummarizesTheShapeForPlacement) {
  // Shape keys before general.architecture, F32 tensors of 32 elements (128 bytes) each.
  GgufBuilder b;
  b.Header(6, 7)
      .KvU32("qwen3.block_count", 2)
      .KvU32("qwen3.context_length", 40960)
      .KvU32("qwen3.embedding_length", 64)
      .KvU32("qwen3.attention.head_count", 4)
      .KvU32("qwen3.attention.head_count_kv", 2)
      .KvU32("other.block_count", 99)  // another architecture's key: ignored
      .KvString("general.architecture", "qwen3")
      .TensorInfo("token_embd.weight", {32}, 0, 0)
      .TensorInfo("blk.0.attn_q.weight", {32}, 0, 128)
      .TensorInfo("blk.0.ffn_up.weight", {32}, 0, 256)
      .TensorInfo("blk.1.attn_q.weight", {32}, 0, 384)
      .TensorInfo("output_norm.weight", {32}, 0, 512)
      .TensorInfo("blk.4000000000.x", {32}, 0, 640)  // a crafted block number: not a layer
      .Align()
      .Zeros(768);
  auto r = Check(b.bytes());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->block_count, 2u);
  EXPECT_EQ(r->context_length, 40960u);
  EXPECT_EQ(r->embedding_length, 64u);
  EXPECT_EQ(r->head_count, 4u);
  EXPECT_EQ(r->head_count_kv, 2u);
  EXPECT_EQ(r->key_length, 16u) << "embedding / heads when the file does not say";
  EXPECT_EQ(r->value_length, 16u);
  EXPECT_EQ(r->layer_bytes, (std::vector<uint64_t>{256, 128}));
  EXPECT_EQ(r->output_bytes, 128u);
  EXPECT_EQ(r->input_bytes, 256u);
  EXPECT_EQ(r->tied_output_bytes, 128u) << "no output.weight: the head reuses token_embd";
}

TEST(GgufPrecheck, EveryTruncationIsACleanError) {
  const std::string full = MinimalValidGguf().bytes();
  // Cut inside the header, the KV section, the tensor table and the tensor data.
  for (size_t len = 0; len < full.size(); ++len) {
    auto r = Check(full.substr(0, len));
    ASSERT_FALSE(r.has_value()) << "accepted a file cut at " << len;
    EXPECT_EQ(r.error().code(), StatusCode::kCorruption);
  }
}

TEST(GgufPrecheck, RejectsHugeCounts) {
  for (uint64_t n : {uint64_t{1} << 63, ~uint64_t{0}, uint64_t{1} << 40}) {
    ExpectRejected(GgufBuilder().Header(n, 0).Zeros(64).bytes(), "tensors, more than the file");
    ExpectRejected(GgufBuilder().Header(0, n).Zeros(64).bytes(), "key-value pairs, more than");
  }
}

TEST(GgufPrecheck, RejectsHugeStringLengths) {
  GgufBuilder key;
  key.Header(0, 1).U64(~uint64_t{0}).Zeros(32);
  ExpectRejected(key.bytes(), "string length 18446744073709551615 exceeds");
  GgufBuilder value;
  value.Header(0, 1).Str("general.architecture").U32(GgufBuilder::kString).U64(uint64_t{1} << 62);
  ExpectRejected(value.bytes(), "exceeds the");
}

TEST(GgufPrecheck, RejectsHugeArrayCounts) {
  GgufBuilder b;
  b.Header(0, 1).Str("some.array").U32(GgufBuilder::kArray).U32(GgufBuilder::kU32).U64(uint64_t{1} << 62);
  ExpectRejected(b.bytes(), "array count 4611686018427387904 exceeds");
}

TEST(GgufPrecheck, RejectsWrongTokenizerArrayTypes) {
  GgufBuilder b;
  b.Header(0, 2).KvString("general.architecture", "llama").Str("tokenizer.ggml.tokens")
      .U32(GgufBuilder::kArray).U32(GgufBuilder::kI32).U64(2).U32(1).U32(2);
  ExpectRejected(b.bytes(), "array element type 5 should be 8");
}

TEST(GgufPrecheck, RejectsUnknownValueTypesAndNestedArrays) {
  ExpectRejected(GgufBuilder().Header(0, 1).Str("k").U32(99).Zeros(16).bytes(), "unknown value type 99");
  GgufBuilder nested;
  nested.Header(0, 1).Str("k").U32(GgufBuilder::kArray).U32(GgufBuilder::kArray).U64(1).Zeros(16);
  ExpectRejected(nested.bytes(), "nested arrays");
}

TEST(GgufPrecheck, RejectsDuplicateKeys) {
  GgufBuilder b;
  b.Header(0, 2).KvString("general.architecture", "a").KvString("general.architecture", "b");
  ExpectRejected(b.bytes(), "duplicate key 'general.architecture'");
}

TEST(GgufPrecheck, RejectsBadTensorDimensions) {
  auto with_tensor = [](const std::vector<int64_t>& ne, uint32_t type) {
    GgufBuilder b;
    b.Header(1, 1).KvString("general.architecture", "llama").TensorInfo("t", ne, type, 0).Align().Zeros(256);
    return b.bytes();
  };
  ExpectRejected(with_tensor({32, 1, 1, 1, 1}, 0), "5 dimensions");
  ExpectRejected(with_tensor({32, 0}, 0), "dimension 1 is 0");
  ExpectRejected(with_tensor({32, -4}, 0), "dimension 1 is -4");
  ExpectRejected(with_tensor({int64_t{1} << 40, int64_t{1} << 40}, 0), "element count overflows");
  ExpectRejected(with_tensor({32}, 4), "unknown tensor type 4");     // removed Q4_2
  ExpectRejected(with_tensor({32}, 1000), "unknown tensor type 1000");
  ExpectRejected(with_tensor({33}, 2), "not a multiple of the q4_0 block size 32");
}

TEST(GgufPrecheck, RejectsBadAlignment) {
  for (uint32_t a : {0u, 13u, 1u << 31}) {
    GgufBuilder b;
    b.Header(0, 2).KvString("general.architecture", "llama").KvU32("general.alignment", a);
    ExpectRejected(b.bytes(), "is not a power of two");
  }
  GgufBuilder as_int32;
  as_int32.Header(0, 1).Str("general.alignment").U32(GgufBuilder::kI32).U32(32);
  ExpectRejected(as_int32.bytes(), "must be a UINT32");
}

TEST(GgufPrecheck, RejectsDuplicateOverlappingAndOutOfFileTensors) {
  auto two = [](const std::string& n1, uint64_t o1, const std::string& n2, uint64_t o2, size_t data) {
    GgufBuilder b;
    b.Header(2, 1).KvString("general.architecture", "llama")
        .TensorInfo(n1, {32}, 0, o1).TensorInfo(n2, {32}, 0, o2).Align().Zeros(data);
    return b.bytes();
  };
  ExpectRejected(two("a", 0, "a", 128, 256), "duplicate tensor 'a'");
  ExpectRejected(two("a", 0, "b", 64, 256), "overlap");
  ExpectRejected(two("a", 0, "b", 1u << 30, 256), "runs past the end of the file");
  ExpectRejected(two("a", 0, "b", ~uint64_t{0} - 31, 256), "runs past the end of the file");
  ExpectRejected(two("a", 0, "b", 7, 256), "not aligned");
}

TEST(GgufPrecheck, RejectsTensorsWhoseSizesOverflowTheLoader) {
  // Two I8 tensors of 0x7FFFFFFFFFFFFFC0 bytes each: ggml's mem_size (with padding) overflows;
  // here the sizes are checked against the file first.
  GgufBuilder b;
  b.Header(2, 1).KvString("general.architecture", "llama")
      .TensorInfo("a", {0x7FFFFFFFFFFFFFC0}, 24, 0)
      .TensorInfo("b", {0x7FFFFFFFFFFFFFC0}, 24, 0x7FFFFFFFFFFFFFC0).Align().Zeros(64);
  ExpectRejected(b.bytes(), "runs past the end of the file");
  GgufBuilder sum;
  sum.Header(3, 1).KvString("general.architecture", "llama");
  for (const char* n : {"a", "b", "c"}) sum.TensorInfo(n, {0x7FFFFFFFFFFFFFC0}, 24, 0);
  ExpectRejected(sum.Align().Zeros(64).bytes(), "total tensor size overflows");
}

TEST(GgufPrecheck, RejectsMaliciousVocabularies) {
  std::string huge(kMaxTokenBytes + 1, 'x');
  GgufBuilder big;
  big.Header(0, 2).KvString("general.architecture", "llama").KvStringArray("tokenizer.ggml.tokens", {"a", huge});
  ExpectRejected(big.bytes(), "exceeds the limit of 4096");

  GgufBuilder bad_byte;
  bad_byte.Header(0, 3).KvString("general.architecture", "llama")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "<0x-1>"})
      .KvI32Array("tokenizer.ggml.token_type", {1, 6});
  ExpectRejected(bad_byte.bytes(), "byte token 1 is not of the form <0xHH>");

  GgufBuilder eos_outside;
  eos_outside.Header(0, 3).KvString("general.architecture", "llama")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "b"}).KvU32("tokenizer.ggml.eos_token_id", 2);
  ExpectRejected(eos_outside.bytes(), "token id 2 is outside the vocabulary of 2");

  GgufBuilder mismatched;
  mismatched.Header(0, 3).KvString("general.architecture", "llama")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "b"}).KvI32Array("tokenizer.ggml.token_type", {1});
  ExpectRejected(mismatched.bytes(), "token_type has 1 entries for 2 tokens");

  GgufBuilder empty;
  empty.Header(0, 2).KvString("general.architecture", "llama").KvStringArray("tokenizer.ggml.tokens", {});
  ExpectRejected(empty.bytes(), "vocabulary is empty");
}

TEST(GgufPrecheck, RequiresAnArchitecture) {
  ExpectRejected(GgufBuilder().Header(0, 0).bytes(), "no general.architecture");
}

}  // namespace
}  // namespace llmd::format
