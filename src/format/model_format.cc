#include "format/model_format.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "common/utf8.h"

namespace llmd::format {
namespace {

uint32_t LoadLe32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

uint64_t LoadLe64(std::string_view b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + i]);
  return v;
}

Status Unsupported(std::string_view what) {
  return CorruptionError("unsupported model format: " + std::string(what));
}

bool LooksLikeText(std::string_view head) {
  // A multibyte character may be cut at the end of the sniffed window.
  size_t bad = FindInvalidUtf8(head);
  if (bad != std::string_view::npos && head.size() - bad >= 4) return false;
  for (size_t i = 0; i < std::min(bad, head.size()); ++i) {
    unsigned char c = static_cast<unsigned char>(head[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') return false;
  }
  return true;
}

}  // namespace

std::string_view ModelFormatName(ModelFormat format) {
  switch (format) {
    case ModelFormat::kGguf: return "GGUF";
    case ModelFormat::kExecuTorchProgram: return "ExecuTorch program";
  }
  return "unknown";
}

Result<ModelFormat> SniffModelFormat(std::string_view head) {
  if (head.empty()) return Unsupported("an empty file");
  if (head.size() >= 4 && head.substr(0, 4) == "GGUF") {
    if (head.size() < 8) return CorruptionError("GGUF file is truncated inside its header");
    uint32_t version = LoadLe32(head, 4);
    if (version == 2 || version == 3) return ModelFormat::kGguf;
    if (version == 1) return CorruptionError("GGUF version 1 is not supported; need 2 or 3");
    if (version == 0x02000000 || version == 0x03000000) {
      return CorruptionError("big-endian GGUF files are not supported on this machine");
    }
    return CorruptionError("unknown GGUF version " + std::to_string(version) + "; need 2 or 3");
  }
  if (head.size() >= 8 && head.substr(4, 2) == "ET") {
    std::string id(head.substr(4, 4));
    if (id == "ET12") return ModelFormat::kExecuTorchProgram;
    return CorruptionError("ExecuTorch program version " + id +
                           " is incompatible; this build reads ET12");
  }
  if (head.size() >= 8 && head.substr(4, 4) == "FT01") {
    return CorruptionError(
        "this is an ExecuTorch weights file (.ptd, FT01); load the matching .pte program");
  }
  if (head.size() >= 4 && head.substr(0, 4) == "PK\x03\x04") {
    return Unsupported("a ZIP archive (a PyTorch .pt/.pth checkpoint?); convert it to GGUF");
  }
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 &&
      head[1] <= 5) {
    return Unsupported("a Python pickle (a legacy PyTorch checkpoint?); convert it to GGUF");
  }
  if (head.size() >= 4 && head.substr(0, 4) == "\x7F" "ELF") {
    return Unsupported("an ELF executable or library");
  }
  if (head.size() >= 10 && head[8] == '{' && head[9] == '"' && LoadLe64(head, 0) > 1) {
    return Unsupported("safetensors; convert it to GGUF");
  }
  if (LooksLikeText(head)) return Unsupported("a text file");
  return Unsupported("unrecognized binary data (no GGUF or ExecuTorch magic)");
}

}  // namespace llmd::format
