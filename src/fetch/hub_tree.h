// The Hugging Face hub's file listing (GET /api/models/{owner}/{repo}/tree/{revision}), read
// into plain structs, and the choice of one GGUF in it by quantization or file name. The
// listing's LFS entries carry the file's sha256 (`lfs.oid`) and size, which the download then
// holds the bytes to.
//
// The choice, for a tag:
//  - a tag ending in ".gguf" names a file: its exact path, or its exact base name when one
//    file has it;
//  - no tag, or "latest": the one GGUF when there is one, else "Q4_K_M" (Ollama's default);
//  - a quantization: the GGUFs whose path contains it, ignoring case. Several: those where it
//    stands as a whole word (not next to a letter or digit, nor followed by '_': "Q4_0" is
//    whole in "m-Q4_0.gguf", not in "m-Q4_0_4_4.gguf"); still not one: refused as ambiguous
//    with the candidates listed. None: NotFound with the GGUFs there are.
//  Multimodal projectors ("mmproj*") are never candidates, and a match that is only the parts
//  of a split GGUF ("-00001-of-00003") is refused as not supported yet.
//
// Thread-safety: pure functions. The JSON library stays inside hub_tree.cc.
#ifndef LLMD_FETCH_HUB_TREE_H_
#define LLMD_FETCH_HUB_TREE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::fetch {

struct HubFile {
  std::string path;  // inside the repository, "/"-separated
  uint64_t size = 0;
  std::string sha256;  // lfs.oid, lowercase hex; "" for a file not stored in LFS
};

// The listing's files (directories and other entries are skipped). Corruption when the reply
// is not a JSON array of objects with a string "path", or a file's fields have the wrong types.
Result<std::vector<HubFile>> ParseHubTree(std::string_view json);

// `repo` ("owner/repo") is for the messages only.
Result<HubFile> PickGguf(const std::vector<HubFile>& files, std::string_view tag,
                         std::string_view repo);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_HUB_TREE_H_
