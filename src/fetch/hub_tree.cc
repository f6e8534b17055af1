// The hub listing through nlohmann::json (parsed without exceptions), and PickGguf.
// Thread-safety: pure functions.
#include "fetch/hub_tree.h"

#include <nlohmann/json.hpp>

#include "fetch/sha256.h"

namespace llmd::fetch {
namespace {

using nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EndsWithGguf(std::string_view path) { return Lower(path).ends_with(".gguf"); }

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// "-00001-of-00003.gguf" at the end of the name.
bool IsSplitPart(std::string_view path) {
  std::string lower = Lower(path);
  size_t of = lower.rfind("-of-");
  if (of == std::string::npos || of < 6 || lower[of - 6] != '-') return false;
  for (size_t i = of - 5; i < of; ++i) {
    if (lower[i] < '0' || lower[i] > '9') return false;
  }
  return true;
}

// One file entry; a non-file entry gives an empty path.
Result<HubFile> ReadEntry(const json& e) {
  auto bad = [](std::string_view why) {
    return CorruptionError("hub listing: " + std::string(why));
  };
  if (!e.is_object() || !e.contains("path") || !e["path"].is_string()) {
    return bad("an entry without a string \"path\"");
  }
  HubFile f;
  if (e.contains("type") && e["type"] != "file") return f;
  f.path = e["path"].get<std::string>();
  if (e.contains("size")) {
    if (!e["size"].is_number_unsigned()) return bad(f.path + ": \"size\" is not a count");
    f.size = e["size"].get<uint64_t>();
  }
  if (!e.contains("lfs") || e["lfs"].is_null()) return f;
  const json& lfs = e["lfs"];
  if (!lfs.is_object() || !lfs.contains("oid") || !lfs["oid"].is_string()) {
    return bad(f.path + ": \"lfs\" without a string \"oid\"");
  }
  Result<std::string> oid = NormalizeSha256(lfs["oid"].get<std::string>());
  if (!oid.has_value()) return bad(f.path + ": lfs.oid: " + oid.error().message());
  f.sha256 = *oid;
  if (lfs.contains("size")) {
    if (!lfs["size"].is_number_unsigned()) return bad(f.path + ": lfs.size is not a count");
    f.size = lfs["size"].get<uint64_t>();
  }
  return f;
}

std::string Names(const std::vector<const HubFile*>& files) {
  std::string out;
  for (size_t i = 0; i < files.size() && i < 24; ++i) {
    if (i > 0) out += ", ";
    out += files[i]->path;
  }
  if (files.size() > 24) out += ", ... (" + std::to_string(files.size()) + " in all)";
  return out.empty() ? "none" : out;
}

// The GGUFs whose path contains `tag` as a whole word (see the header).
std::vector<const HubFile*> WholeWord(const std::vector<const HubFile*>& in,
                                      const std::string& tag) {
  std::vector<const HubFile*> out;
  for (const HubFile* f : in) {
    const std::string p = Lower(f->path);
    for (size_t at = p.find(tag); at != std::string::npos; at = p.find(tag, at + 1)) {
      const size_t end = at + tag.size();
      const bool left = at == 0 || !IsAlnum(p[at - 1]);
      const bool right = end == p.size() || (!IsAlnum(p[end]) && p[end] != '_');
      if (left && right) {
        out.push_back(f);
        break;
      }
    }
  }
  return out;
}

Result<HubFile> PickByName(const std::vector<const HubFile*>& ggufs, std::string_view tag,
                           std::string_view repo) {
  std::vector<const HubFile*> by_base;
  for (const HubFile* f : ggufs) {
    if (f->path == tag) return *f;
    if (BaseName(f->path) == tag) by_base.push_back(f);
  }
  if (by_base.size() == 1) return *by_base.front();
  if (by_base.size() > 1) {
    return InvalidArgumentError(std::string(repo) + ": several files are named " +
                                std::string(tag) + ": " + Names(by_base) + "; give the path");
  }
  return NotFoundError(std::string(repo) + " has no file " + std::string(tag) +
                       "; its GGUF files: " + Names(ggufs));
}

Result<HubFile> PickByQuantization(const std::vector<const HubFile*>& ggufs, std::string_view tag,
                                   std::string_view repo) {
  const std::string want = Lower(tag);
  std::vector<const HubFile*> matches;
  for (const HubFile* f : ggufs) {
    if (Lower(f->path).find(want) != std::string::npos) matches.push_back(f);
  }
  if (matches.empty()) {
    return NotFoundError(std::string(repo) + " has no GGUF file matching '" + std::string(tag) +
                         "'; its GGUF files: " + Names(ggufs));
  }
  if (matches.size() > 1) {
    std::vector<const HubFile*> whole = WholeWord(matches, want);
    if (whole.size() == 1) return *whole.front();
    if (!whole.empty()) matches = whole;
  }
  if (matches.size() == 1) return *matches.front();
  bool all_split = true;
  for (const HubFile* f : matches) all_split = all_split && IsSplitPart(f->path);
  if (all_split) {
    return UnimplementedError(std::string(repo) + ": '" + std::string(tag) + "' is a split GGUF (" +
                              Names(matches) + "); split files are not supported yet");
  }
  return InvalidArgumentError(std::string(repo) + ": '" + std::string(tag) +
                              "' is ambiguous; candidates: " + Names(matches));
}

}  // namespace

Result<std::vector<HubFile>> ParseHubTree(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return CorruptionError("hub listing: not valid JSON");
  if (!doc.is_array()) return CorruptionError("hub listing: not a JSON array");
  std::vector<HubFile> files;
  for (const json& e : doc) {
    LLMD_ASSIGN_OR_RETURN(HubFile f, ReadEntry(e));
    if (!f.path.empty()) files.push_back(std::move(f));
  }
  return files;
}

Result<HubFile> PickGguf(const std::vector<HubFile>& files, std::string_view tag,
                         std::string_view repo) {
  std::vector<const HubFile*> ggufs;
  for (const HubFile& f : files) {
    if (EndsWithGguf(f.path) && !Lower(BaseName(f.path)).starts_with("mmproj")) ggufs.push_back(&f);
  }
  if (EndsWithGguf(tag)) return PickByName(ggufs, tag, repo);
  if (tag.empty() || tag == "latest") {
    if (ggufs.size() == 1) return *ggufs.front();
    tag = "Q4_K_M";
  }
  return PickByQuantization(ggufs, tag, repo);
}

}  // namespace llmd::fetch
