// The model loader's front door: opens a model file, decides which engine it is for from its
// first bytes, and validates its structure before any engine touches it.
#ifndef LLMD_FORMAT_MODEL_FILE_H_
#define LLMD_FORMAT_MODEL_FILE_H_

#include <cstdint>
#include <string>

#include "format/gguf_precheck.h"
#include "format/model_format.h"
#include "llmd/result.h"

namespace llmd::format {

struct ModelFileInfo {
  std::string path;
  ModelFormat format = ModelFormat::kGguf;
  uint64_t file_bytes = 0;
  GgufSummary gguf;  // filled for kGguf
};

// Inspects `path`. Errors carry the path in their message:
//  - NotFound / InvalidArgument for a missing, unreadable or non-regular file;
//  - Corruption for an unsupported format or a GGUF that fails the pre-check;
//  - Unimplemented for an ExecuTorch program in a build without ExecuTorch.
Result<ModelFileInfo> InspectModelFile(const std::string& path);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_MODEL_FILE_H_
