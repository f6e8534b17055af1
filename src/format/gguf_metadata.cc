#include "format/gguf_metadata.h"

#include <utility>

#include "format/gguf_precheck.h"

namespace llmd::format {

const GgufValue* GgufMetadata::Find(std::string_view key) const {
  for (const auto& kv : values) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

Result<GgufMetadata> ReadGgufMetadata(const RandomAccessFile& file) {
  GgufMetadata metadata;
  LLMD_ASSIGN_OR_RETURN(GgufSummary summary, PrecheckGguf(file, &metadata));
  metadata.architecture = std::move(summary.architecture);
  metadata.parameter_count = summary.parameter_count;
  return metadata;
}

std::string FileTypeName(std::optional<uint32_t> file_type) {
  // llama.cpp's llama_ftype values, named as Ollama names them.
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
      {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
      {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
      {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"},
      {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},  {27, "IQ3_M"},
      {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"}, {31, "IQ1_M"},  {32, "BF16"},
      {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4"},  {39, "NVFP4"},  {40, "Q1_0"},
      {41, "Q2_0"}};
  if (!file_type) return "unknown";
  for (const auto& [id, name] : kNames) {
    if (id == *file_type) return name;
  }
  return "unknown";
}

}  // namespace llmd::format
