#include "models/scan_cache.h"

#include <algorithm>
#include <utility>

#include "format/gguf_metadata.h"
#include "format/random_access_file.h"

namespace llmd::models {
namespace {

bool Pools(const format::GgufMetadata& metadata) {
  const format::GgufValue* v = metadata.Find(metadata.architecture + ".pooling_type");
  if (v == nullptr) return false;
  if (const auto* u = std::get_if<uint64_t>(v)) return *u != 0;
  if (const auto* i = std::get_if<int64_t>(v)) return *i > 0;  // -1: unspecified
  return false;
}

}  // namespace

Result<GgufFacts> ReadGgufFacts(const std::string& path) {
  LLMD_ASSIGN_OR_RETURN(std::unique_ptr<format::RandomAccessFile> file,
                        format::OpenRandomAccessFile(path));
  std::string head(static_cast<size_t>(std::min<uint64_t>(file->size(), format::kSniffBytes)),
                   '\0');
  LLMD_RETURN_IF_ERROR(file->Read(0, head.size(), head.data()).WithContext(path));
  auto kind = format::SniffModelFormat(head);
  if (!kind.has_value()) return kind.error().WithContext(path);
  if (*kind != format::ModelFormat::kGguf) {
    return CorruptionError(path + ": an " + std::string(format::ModelFormatName(*kind)) +
                           ", not GGUF, under a .gguf name");
  }
  format::GgufMetadata metadata;
  auto summary = format::PrecheckGguf(*file, &metadata);
  if (!summary.has_value()) return summary.error().WithContext(path);
  metadata.architecture = summary->architecture;
  GgufFacts facts;
  facts.architecture = summary->architecture;
  facts.parameter_count = summary->parameter_count;
  facts.file_type = metadata.file_type;
  facts.quantization = format::FileTypeName(metadata.file_type);
  facts.pools = Pools(metadata);
  facts.summary = std::move(*summary);
  return facts;
}

Result<GgufFacts> ScanCache::Gguf(const std::string& real_path, const FileStamp& stamp) {
  auto it = gguf_.find(real_path);
  if (it != gguf_.end() && it->second.stamp == stamp) return it->second.value;
  ++gguf_reads_;
  Result<GgufFacts> facts = ReadGgufFacts(real_path);
  gguf_.insert_or_assign(real_path, Slot<GgufFacts>{stamp, facts});
  return facts;
}

Result<Manifest> ScanCache::Modelfile(const std::string& real_path, const FileStamp& stamp) {
  auto it = modelfiles_.find(real_path);
  if (it != modelfiles_.end() && it->second.stamp == stamp) return it->second.value;
  ++modelfile_reads_;
  Result<Manifest> manifest = ReadModelfile(real_path);
  modelfiles_.insert_or_assign(real_path, Slot<Manifest>{stamp, manifest});
  return manifest;
}

void ScanCache::KeepOnly(const std::set<std::string>& paths) {
  std::erase_if(gguf_, [&](const auto& kv) { return paths.count(kv.first) == 0; });
  std::erase_if(modelfiles_, [&](const auto& kv) { return paths.count(kv.first) == 0; });
}

}  // namespace llmd::models
