// Resolves `hf.co/owner/repo:tag` to one file: fetches the repository's listing from the hub
// API ({base}/api/models/{owner}/{repo}/tree/{revision}?recursive=true), picks the GGUF
// (hub_tree.h), and builds its download URL ({base}/{owner}/{repo}/resolve/{revision}/{path},
// which the hub redirects to its CDN). The base URL is an option so the tests serve the hub
// from loopback.
//
// Thread-safety: ResolveHubFile may run on several threads at once (one transfer each).
#ifndef LLMD_FETCH_HUB_RESOLVER_H_
#define LLMD_FETCH_HUB_RESOLVER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "fetch/http_get.h"
#include "fetch/pull_source.h"
#include "llmd/result.h"

namespace llmd::fetch {

struct HubOptions {
  std::string base_url = "https://huggingface.co";  // no trailing '/'
  std::string revision = "main";
  size_t max_listing_bytes = size_t{16} << 20;
  TransferLimits limits;
};

struct ResolvedHubFile {
  std::string url;        // the file's download URL
  std::string path;       // inside the repository
  std::string file_name;  // its base name, the local name
  std::string sha256;     // lfs.oid; "" for a file outside LFS
  uint64_t size = 0;
};

Result<ResolvedHubFile> ResolveHubFile(const HubRef& ref, const HubOptions& options);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_HUB_RESOLVER_H_
