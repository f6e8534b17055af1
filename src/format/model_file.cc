#include "format/model_file.h"

#include <algorithm>

#include "format/random_access_file.h"

namespace llmd::format {

Result<ModelFileInfo> InspectModelFile(const std::string& path) {
  auto opened = OpenRandomAccessFile(path);
  if (!opened.has_value()) return opened.error();
  const RandomAccessFile& file = **opened;

  ModelFileInfo info;
  info.path = path;
  info.file_bytes = file.size();
  std::string head(static_cast<size_t>(std::min<uint64_t>(file.size(), kSniffBytes)), '\0');
  LLMD_RETURN_IF_ERROR(file.Read(0, head.size(), head.data()).WithContext(path));

  auto format = SniffModelFormat(head);
  if (!format.has_value()) return format.error().WithContext(path);
  info.format = *format;

  switch (info.format) {
    case ModelFormat::kGguf: {
      auto summary = PrecheckGguf(file);
      if (!summary.has_value()) return summary.error().WithContext(path);
      info.gguf = std::move(*summary);
      return info;
    }
    case ModelFormat::kExecuTorchProgram:
      return UnimplementedError(path +
                                ": an ExecuTorch program (.pte), but this build has no ExecuTorch "
                                "support (configure with -DLLMD_WITH_EXECUTORCH=ON)");
  }
  return InternalError("unhandled model format");
}

}  // namespace llmd::format
