// PlanPull: the URL and hub cases.
// Thread-safety: no shared state.
#include "fetch/pull_plan.h"

#include "fetch/partial_file.h"
#include "fetch/pull_source.h"
#include "fetch/sha256.h"
#include "fetch/url_policy.h"

namespace llmd::fetch {
namespace {

Result<DownloadRequest> PlanUrl(const std::string& url, const PullTarget& target) {
  LLMD_ASSIGN_OR_RETURN(UrlParts parts, CheckFetchUrl(url));
  DownloadRequest r;
  r.url = url;
  r.directory = target.directory;
  r.sha256 = target.sha256;
  r.file_name = target.file_name;
  if (r.file_name.empty()) {
    const size_t slash = parts.path.rfind('/');
    r.file_name = slash == std::string::npos ? parts.path : parts.path.substr(slash + 1);
    if (!CheckFileName(r.file_name).ok() || r.file_name.find('%') != std::string::npos) {
      return InvalidArgumentError("cannot name the file of " + url + " from its path; give a name");
    }
  }
  LLMD_RETURN_IF_ERROR(CheckFileName(r.file_name));
  return r;
}

Result<DownloadRequest> PlanHub(const HubRef& ref, const PullTarget& target,
                                const HubOptions& hub) {
  LLMD_ASSIGN_OR_RETURN(ResolvedHubFile file, ResolveHubFile(ref, hub));
  DownloadRequest r;
  r.url = file.url;
  r.directory = target.directory;
  r.file_name = target.file_name.empty() ? file.file_name : target.file_name;
  LLMD_RETURN_IF_ERROR(CheckFileName(r.file_name));
  r.sha256 = file.sha256;
  if (!target.sha256.empty()) {
    LLMD_ASSIGN_OR_RETURN(std::string mine, NormalizeSha256(target.sha256));
    if (!file.sha256.empty() && mine != file.sha256) {
      return InvalidArgumentError(HubRefName(ref) + ": the given sha256 " + mine +
                                  " is not the hub's " + file.sha256 + " for " + file.path);
    }
    r.sha256 = mine;
  }
  // The listing's size: a file over the limit or the free space is refused before a byte.
  r.expected_bytes = file.size > 0 ? static_cast<int64_t>(file.size) : -1;
  return r;
}

}  // namespace

Result<DownloadRequest> PlanPull(std::string_view source, const PullTarget& target,
                                 const HubOptions& hub) {
  LLMD_ASSIGN_OR_RETURN(PullSource s, ParsePullSource(source));
  if (s.kind == PullSource::Kind::kUrl) return PlanUrl(s.url, target);
  return PlanHub(s.hub, target, hub);
}

}  // namespace llmd::fetch
