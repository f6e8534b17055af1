// ResolveHubFile: one listing GET, then a pure choice.
// Thread-safety: no shared state.
#include "fetch/hub_resolver.h"

#include "fetch/hub_tree.h"
#include "fetch/partial_file.h"

namespace llmd::fetch {
namespace {

// Percent-encodes a repository path for a URL, segment by segment ('/' kept). The listing is
// the hub's, so its paths are not trusted to be URL-safe.
std::string EncodePath(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (plain) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

// A revision is a branch, tag or commit name: no '/', '?', '#' or '%' that would reshape a URL.
Status CheckRevision(const std::string& revision) {
  if (revision.empty()) return InvalidArgumentError("hub revision is empty");
  for (char c : revision) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return InvalidArgumentError("bad hub revision '" + revision + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<ResolvedHubFile> ResolveHubFile(const HubRef& ref, const HubOptions& options) {
  LLMD_RETURN_IF_ERROR(CheckRevision(options.revision));
  const std::string repo = ref.owner + "/" + ref.repo;
  const std::string listing_url =
      options.base_url + "/api/models/" + repo + "/tree/" + options.revision + "?recursive=true";
  Result<std::string> listing =
      FetchToMemory(listing_url, options.max_listing_bytes, options.limits);
  if (!listing.has_value()) {
    return listing.error().WithContext("listing " + HubRefName(ref));
  }
  LLMD_ASSIGN_OR_RETURN(std::vector<HubFile> files, ParseHubTree(*listing));
  LLMD_ASSIGN_OR_RETURN(HubFile file, PickGguf(files, ref.tag, repo));
  ResolvedHubFile out;
  out.path = file.path;
  const size_t slash = file.path.rfind('/');
  out.file_name = slash == std::string::npos ? file.path : file.path.substr(slash + 1);
  LLMD_RETURN_IF_ERROR(CheckFileName(out.file_name));
  out.url =
      options.base_url + "/" + repo + "/resolve/" + options.revision + "/" + EncodePath(file.path);
  out.sha256 = file.sha256;
  out.size = file.size;
  return out;
}

}  // namespace llmd::fetch
