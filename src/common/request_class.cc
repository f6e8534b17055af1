#include "common/request_class.h"

#include <algorithm>
#include <string>

namespace llmd {

const char* RequestClassName(RequestClass c) {
  switch (c) {
    case RequestClass::kInteractive: return "interactive";
    case RequestClass::kNormal: return "normal";
    case RequestClass::kBackground: return "background";
  }
  return "normal";
}

std::optional<RequestClass> ParseRequestClass(std::string_view name) {
  for (RequestClass c : {RequestClass::kInteractive, RequestClass::kNormal, RequestClass::kBackground}) {
    if (name == RequestClassName(c)) return c;
  }
  return std::nullopt;
}

RequestClass ResolveClass(const std::vector<ClassRule>& rules, const PeerIdentity& peer,
                          std::optional<RequestClass> requested) {
  const ClassRule* match = nullptr;
  for (const ClassRule& rule : rules) {
    if (rule.uid.has_value() && rule.uid == peer.uid) {
      match = &rule;
      break;  // a uid rule is the most specific
    }
    if (match == nullptr && rule.gid.has_value() && rule.gid == peer.gid) match = &rule;
  }
  const ClassRule fallback;
  const ClassRule& rule = match != nullptr ? *match : fallback;
  const RequestClass wanted = requested.value_or(rule.default_class);
  // Precedence runs from 0 (interactive): the ceiling is the lowest value a request may take.
  return std::max(wanted, rule.ceiling);
}

Result<BackgroundAction> ParseBackgroundAction(std::string_view text) {
  for (BackgroundAction action : {BackgroundAction::kRun, BackgroundAction::kThrottle, BackgroundAction::kPause}) {
    if (text == BackgroundActionName(action)) return action;
  }
  // Appended, not "'" + std::string(text): GCC 12 warns falsely (-Wrestrict) on that form.
  std::string message = "'";
  message.append(text).append("' is not a background action (must be run, throttle or pause)");
  return InvalidArgumentError(std::move(message));
}

std::string_view BackgroundActionName(BackgroundAction action) {
  switch (action) {
    case BackgroundAction::kRun:
      return "run";
    case BackgroundAction::kThrottle:
      return "throttle";
    case BackgroundAction::kPause:
      return "pause";
  }
  return "run";
}

}  // namespace llmd
