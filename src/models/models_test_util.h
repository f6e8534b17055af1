// Test support for the models tests: temporary directories and small valid GGUF files on
// disk. Header-only; tests only.
#ifndef LLMD_MODELS_MODELS_TEST_UTIL_H_
#define LLMD_MODELS_MODELS_TEST_UTIL_H_

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "tests/support/gguf_builder.h"

namespace llmd::models::testing {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "llmd_models_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Writes `bytes` to `path`, making its folders.
inline void WriteFile(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A small valid GGUF (tests/support/gguf_builder.h's MinimalValidGguf with more keys): one
// 32-element F32 tensor, so 32 parameters.
inline std::string TinyGguf(const std::string& architecture = "llama",
                            std::optional<uint32_t> file_type = std::nullopt,
                            std::optional<uint32_t> pooling_type = std::nullopt) {
  llmd::testing::GgufBuilder b;
  b.Header(1, 3 + (file_type ? 1 : 0) + (pooling_type ? 1 : 0));
  b.KvString("general.architecture", architecture);
  if (file_type) b.KvU32("general.file_type", *file_type);
  if (pooling_type) b.KvU32(architecture + ".pooling_type", *pooling_type);
  b.KvStringArray("tokenizer.ggml.tokens", {"a", "b", "<0x0A>", "c"})
      .KvI32Array("tokenizer.ggml.token_type", {1, 1, 6, 1})
      .TensorInfo("w", {32}, 0, 0)
      .Align()
      .Zeros(128);
  return b.bytes();
}

}  // namespace llmd::models::testing

#endif  // LLMD_MODELS_MODELS_TEST_UTIL_H_
