// The GGUF pre-check on arbitrary files: a clean error or a summary, never a crash, a hang
// or an allocation the file cannot back; with the metadata read too, the same verdict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/gguf_metadata.h"
#include "format/gguf_precheck.h"
#include "format/model_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)llmd::format::SniffModelFormat(bytes.substr(0, llmd::format::kSniffBytes));
  auto file = llmd::format::NewMemoryFile(bytes);
  auto summary = llmd::format::PrecheckGguf(*file);
  if (summary.has_value() && summary->data_offset > size) __builtin_trap();
  auto metadata = llmd::format::ReadGgufMetadata(*file);
  if (metadata.has_value() != summary.has_value()) __builtin_trap();
  if (metadata.has_value() && metadata->parameter_count != summary->parameter_count) __builtin_trap();
  return 0;
}
