// Request classes: who is waiting on an answer. A person waiting on the voice pipeline is
// `interactive`, a program doing background work is `background`, everything else `normal`.
// The scheduler serves the higher class first and pauses lower ones to do so; their work is
// kept (docs/architecture.md, "Request classes").
//
// A peer's class comes from the config (ClassRule, by UID or GID): a default for requests that
// name none, and a ceiling that no request of that peer may rise above. A request may always
// lower its class, so a background app cannot claim to be the voice pipeline.
#ifndef LLMD_COMMON_REQUEST_CLASS_H_
#define LLMD_COMMON_REQUEST_CLASS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd {

// Ordered by precedence: a lower value is served first. The values are the native protocol's.
enum class RequestClass : uint8_t { kInteractive = 0, kNormal = 1, kBackground = 2 };
inline constexpr int kRequestClasses = 3;

// "interactive", "normal", "background".
const char* RequestClassName(RequestClass c);
std::optional<RequestClass> ParseRequestClass(std::string_view name);
inline int ClassIndex(RequestClass c) { return static_cast<int>(c); }

// What the config gives the peers it names: uid or gid (exactly one set), the class of their
// requests that name none, and the highest class they may ask for.
struct ClassRule {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  RequestClass default_class = RequestClass::kNormal;
  RequestClass ceiling = RequestClass::kNormal;
};

// The peer a request came from, as far as it is known (TCP peers off loopback are not).
struct PeerIdentity {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

// The class a request runs in: the one it asks for (or, asking none, its peer's default),
// never above its peer's ceiling. A uid rule wins over a gid rule; a peer no rule names gets
// `normal` by default, with `normal` as its ceiling. The daemon itself (an embedded engine, a
// root peer) is the caller's to trust: pass a rule that allows interactive.
RequestClass ResolveClass(const std::vector<ClassRule>& rules, const PeerIdentity& peer,
                          std::optional<RequestClass> requested);

// What background requests do under a device condition (on battery, hot): run as usual, run
// one step in a few (throttle), or wait with their memory kept (pause). Ordered by strictness.
enum class BackgroundAction { kRun, kThrottle, kPause };

// "run" | "throttle" | "pause" (the config's spelling); InvalidArgument names the allowed values.
Result<BackgroundAction> ParseBackgroundAction(std::string_view text);
std::string_view BackgroundActionName(BackgroundAction action);

}  // namespace llmd

#endif  // LLMD_COMMON_REQUEST_CLASS_H_
