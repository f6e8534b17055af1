// ParsePullSource: strict, since the names end up inside URLs.
// Thread-safety: pure functions.
#include "fetch/pull_source.h"

namespace llmd::fetch {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool ValidHubName(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  if (s.find("..") != std::string_view::npos) return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

// A tag is a quantization or a path inside the repository: name characters and '/', no empty,
// "." or ".." segment.
bool ValidTag(std::string_view s) {
  if (s.size() > 256) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('/', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view seg = s.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    for (char c : seg) {
      if (!IsNameChar(c)) return false;
    }
    start = end + 1;
  }
  return true;
}

bool StripPrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

}  // namespace

Result<PullSource> ParsePullSource(std::string_view text) {
  const std::string whole(text);
  PullSource out;
  if (text.starts_with("https://") || text.starts_with("http://")) {
    out.kind = PullSource::Kind::kUrl;
    out.url = whole;  // the URL policy judges it when it is fetched
    return out;
  }
  std::string_view s = text;
  if (!StripPrefix(s, "hf.co/") && !StripPrefix(s, "huggingface.co/")) {
    return InvalidArgumentError(
        "cannot pull '" + whole +
        "': expected an https URL or hf.co/owner/repo[:quantization or file]");
  }
  out.kind = PullSource::Kind::kHub;
  size_t slash = s.find('/');
  size_t colon = s.find(':');
  if (slash == std::string_view::npos || (colon != std::string_view::npos && colon < slash)) {
    return InvalidArgumentError("cannot pull '" + whole + "': expected hf.co/owner/repo");
  }
  std::string_view repo_and_tag = s.substr(slash + 1);
  colon = repo_and_tag.find(':');
  out.hub.owner = std::string(s.substr(0, slash));
  out.hub.repo = std::string(repo_and_tag.substr(0, colon));
  if (colon != std::string_view::npos) out.hub.tag = std::string(repo_and_tag.substr(colon + 1));
  if (!ValidHubName(out.hub.owner) || !ValidHubName(out.hub.repo)) {
    return InvalidArgumentError("cannot pull '" + whole + "': bad owner or repository name");
  }
  if (colon != std::string_view::npos && !ValidTag(out.hub.tag)) {
    return InvalidArgumentError("cannot pull '" + whole + "': bad tag '" + out.hub.tag + "'");
  }
  return out;
}

std::string HubRefName(const HubRef& ref) {
  std::string name = "hf.co/" + ref.owner + "/" + ref.repo;
  if (!ref.tag.empty()) name += ":" + ref.tag;
  return name;
}

}  // namespace llmd::fetch
