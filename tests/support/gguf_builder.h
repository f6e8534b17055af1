// GgufBuilder: writes GGUF bytes field by field, valid or deliberately broken, for the
// pre-check's tests and fuzz seeds. Header-only test support.
#ifndef LLMD_TESTS_SUPPORT_GGUF_BUILDER_H_
#define LLMD_TESTS_SUPPORT_GGUF_BUILDER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace llmd::testing {

class GgufBuilder {
 public:
  enum Type : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray,
                         kU64, kI64, kF64 };

  GgufBuilder& Raw(const std::string& bytes) { out_ += bytes; return *this; }
  GgufBuilder& U32(uint32_t v) { return Le(v, 4); }
  GgufBuilder& U64(uint64_t v) { return Le(v, 8); }
  GgufBuilder& Str(const std::string& s) { U64(s.size()); out_ += s; return *this; }

  // "GGUF", version, n_tensors, n_kv.
  GgufBuilder& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    out_ += "GGUF";
    return U32(version).U64(n_tensors).U64(n_kv);
  }
  GgufBuilder& KvString(const std::string& key, const std::string& value) {
    return Str(key).U32(kString).Str(value);
  }
  GgufBuilder& KvU32(const std::string& key, uint32_t value) { return Str(key).U32(kU32).U32(value); }
  GgufBuilder& KvStringArray(const std::string& key, const std::vector<std::string>& values) {
    Str(key).U32(kArray).U32(kString).U64(values.size());
    for (const auto& v : values) Str(v);
    return *this;
  }
  GgufBuilder& KvI32Array(const std::string& key, const std::vector<int32_t>& values) {
    Str(key).U32(kArray).U32(kI32).U64(values.size());
    for (int32_t v : values) U32(static_cast<uint32_t>(v));
    return *this;
  }
  // One tensor info: name, dims, ggml type, offset into the data section.
  GgufBuilder& TensorInfo(const std::string& name, const std::vector<int64_t>& ne, uint32_t type,
                          uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) U64(static_cast<uint64_t>(d));
    return U32(type).U64(offset);
  }
  // Zero padding up to the next multiple of `alignment`.
  GgufBuilder& Align(size_t alignment = 32) {
    while (out_.size() % alignment != 0) out_.push_back('\0');
    return *this;
  }
  GgufBuilder& Zeros(size_t n) { out_.append(n, '\0'); return *this; }

  const std::string& bytes() const { return out_; }
  size_t size() const { return out_.size(); }

 private:
  GgufBuilder& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  std::string out_;
};

// A small valid GGUF: architecture, a 4-token vocabulary, one 32-element F32 tensor.
inline GgufBuilder MinimalValidGguf() {
  GgufBuilder b;
  b.Header(1, 3)
      .KvString("general.architecture", "llama")
      .KvStringArray("tokenizer.ggml.tokens", {"a", "b", "<0x0A>", "c"})
      .KvI32Array("tokenizer.ggml.token_type", {1, 1, 6, 1})
      .TensorInfo("w", {32}, 0, 0)
      .Align()
      .Zeros(128);
  return b;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_GGUF_BUILDER_H_
