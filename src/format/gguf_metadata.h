// What a GGUF file says about its model, for the reports that show it (Ollama's /api/show and
// /api/tags): the architecture, the parameter count, the quantization (llama.cpp's file type),
// the chat template and every key's value. Read by the pre-check's own walk (PrecheckGguf),
// so a model file is parsed by one reader with one set of checks: a file the pre-check
// refuses has no metadata either. No JSON here; src/http renders these values.
//
// Thread-safety: stateless; `file` is only read.
#ifndef LLMD_FORMAT_GGUF_METADATA_H_
#define LLMD_FORMAT_GGUF_METADATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "format/random_access_file.h"
#include "llmd/result.h"

namespace llmd::format {

// What a report shows of a value; longer ones are left out (GgufValue's std::monostate).
inline constexpr uint64_t kMaxShownStringBytes = 4096;
inline constexpr uint64_t kMaxShownArray = 1024;  // elements
inline constexpr uint64_t kMaxChatTemplateBytes = 1 << 20;

// One scalar as the file holds it: an unsigned integer (u8..u64), a signed one (i8..i64,
// sign-extended), an f32, an f64 or a bool.
using GgufScalar = std::variant<uint64_t, int64_t, float, double, bool>;

// A key's value. std::monostate: not shown (a string over kMaxShownStringBytes, an array of
// strings such as the vocabulary, an array of more than kMaxShownArray elements).
using GgufValue = std::variant<std::monostate, uint64_t, int64_t, float, double, bool, std::string,
                               std::vector<GgufScalar>>;

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufMetadata {
  std::string architecture;      // general.architecture
  uint64_t parameter_count = 0;  // the tensors' elements, summed
  // general.file_type (llama.cpp's ftype) when it is an unsigned integer; none otherwise.
  std::optional<uint32_t> file_type;
  // tokenizer.chat_template; empty: none, or longer than kMaxChatTemplateBytes.
  std::string chat_template;
  // Every key's value in file order, but for a string tokenizer.chat_template (chat_template).
  std::vector<GgufKeyValue> values;

  // The value of `key`; nullptr when the file has no such key (or it is the chat template).
  const GgufValue* Find(std::string_view key) const;
};

// Pre-checks `file` as PrecheckGguf does (the same checks, the same Corruption errors) and
// returns what it says about its model.
Result<GgufMetadata> ReadGgufMetadata(const RandomAccessFile& file);

// "Q4_0", "Q8_0", "F16", ... for a llama.cpp file type (llama_ftype); "unknown" for none or
// one this build does not know.
std::string FileTypeName(std::optional<uint32_t> file_type);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_GGUF_METADATA_H_
