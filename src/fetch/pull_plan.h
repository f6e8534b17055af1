// PlanPull: turns what `pull` is given (pull_source.h) into a DownloadRequest: for a URL, the
// local name is its last path segment unless the caller names it; for a hub reference, the
// URL, name, size and sha256 come from the hub listing (hub_resolver.h). A caller's sha256
// must agree with the hub's.
//
// Thread-safety: may run on several threads at once.
#ifndef LLMD_FETCH_PULL_PLAN_H_
#define LLMD_FETCH_PULL_PLAN_H_

#include <string>
#include <string_view>

#include "fetch/download.h"
#include "fetch/hub_resolver.h"
#include "llmd/result.h"

namespace llmd::fetch {

struct PullTarget {
  std::string directory;  // where the model goes
  std::string file_name;  // "": from the URL or the hub's file
  std::string sha256;     // "": the hub's, or none for a URL
};

Result<DownloadRequest> PlanPull(std::string_view source, const PullTarget& target,
                                 const HubOptions& hub);

}  // namespace llmd::fetch

#endif  // LLMD_FETCH_PULL_PLAN_H_
