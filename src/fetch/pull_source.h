// What `pull` is asked for: an https URL, or a Hugging Face repository with a file or a
// quantization, in Ollama's form `hf.co/owner/repo:Q4_K_M` (also `huggingface.co/...`; the tag
// may be a file name ending in .gguf; no tag or "latest" picks the default, hub_tree.h).
//
// Thread-safety: pure functions.
#ifndef LLMD_FETCH_PULL_SOURCE_H_
#define LLMD_FETCH_PULL_SOURCE_H_

#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::fetch {

struct HubRef {
  std::string owner;
  std::string repo;
  std::string tag;  // a quantization ("Q4_K_M") or a file path ("x/model-Q8_0.gguf"); "": default
};

struct PullSource {
  enum class Kind { kUrl, kHub };
  Kind kind = Kind::kUrl;
  std::string url;  // kUrl
  HubRef hub;       // kHub
};

// InvalidArgument for anything else, saying which forms are accepted. Owner and repository
// names are held to the hub's characters (letters, digits, '-', '_', '.'; no "..", no
// leading or trailing '-' or '.'), so they cannot change the shape of a URL built from them.
Result<PullSource> ParsePullSource(std::string_view text);

// "hf.co/owner/repo:tag" (without ":tag" when the tag is empty).
std::string HubRefName(const HubRef& ref);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_PULL_SOURCE_H_
