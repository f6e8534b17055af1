#include "config/config_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/duration.h"

namespace llmd::config {

Status Bad(const std::string& why) { return InvalidArgumentError(why); }

Status ParseFloat(const std::string& s, float* out, float lo, float hi, const char* range) {
  char* end = nullptr;
  float v = std::strtof(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return Bad("not a number");
  if (!std::isfinite(v) || v < lo || v > hi) return Bad(std::string("must be in ") + range);
  *out = v;
  return Status::Ok();
}

Status ParseBool(const std::string& s, bool* out) {
  if (s == "true" || s == "1" || s == "yes" || s == "on") *out = true;
  else if (s == "false" || s == "0" || s == "no" || s == "off") *out = false;
  else return Bad("not a boolean (true or false)");
  return Status::Ok();
}

// A pinned system prompt: the text itself, or "@PATH" for a file's text (its trailing
// newlines dropped, as a client sending the same text would not send them).
Status AddPinnedPrompt(const std::string& v, std::vector<std::string>* prompts) {
  std::string text = v;
  if (!v.empty() && v[0] == '@') {
    std::ifstream in(v.substr(1), std::ios::binary);
    if (!in) return Bad("cannot read " + v.substr(1) + ": " + std::strerror(errno));
    std::ostringstream os;
    os << in.rdbuf();
    text = os.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.size() > kMaxPinnedPromptBytes) return Bad(v.substr(1) + " is over " + std::to_string(kMaxPinnedPromptBytes) + " bytes");
  }
  if (text.empty()) return Bad("an empty system prompt");
  prompts->push_back(std::move(text));
  return Status::Ok();
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Setter U32(uint32_t DaemonConfig::*field, long long lo, long long hi) {
  return [=](DaemonConfig& c, const std::string& v) { return ParseInt(v, &(c.*field), lo, hi); };
}
// A duration of at least 0 ("0": never), up to a year.
Setter Duration(int64_t DaemonConfig::*field) {
  return [=](DaemonConfig& c, const std::string& v) -> Status {
    LLMD_ASSIGN_OR_RETURN(int64_t ms, ParseDurationMs(v));
    if (ms < 0 || ms > 366LL * 24 * 3600 * 1000) return Bad("must be between 0 (never) and a year");
    c.*field = ms;
    return Status::Ok();
  };
}
Setter Str(std::string DaemonConfig::*field) {
  return [=](DaemonConfig& c, const std::string& v) { c.*field = v; return Status::Ok(); };
}
Setter IdList(std::vector<uint32_t> DaemonConfig::*field) {
  return [=](DaemonConfig& c, const std::string& v) {
    (c.*field).clear();
    for (const auto& item : SplitList(v)) {
      uint32_t id;
      LLMD_RETURN_IF_ERROR(ParseInt(item, &id, 0, 0xFFFFFFFE));
      (c.*field).push_back(id);
    }
    return Status::Ok();
  };
}

// "uid:1001=interactive", "gid:50=background/normal", comma-separated.
Status ParseClassRules(const std::string& v, std::vector<ClassRule>* rules) {
  rules->clear();
  for (const std::string& item : SplitList(v)) {
    const size_t colon = item.find(':');
    const size_t eq = item.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon) {
      return Bad("'" + item + "' is not uid:N=CLASS or gid:N=CLASS[/CEILING]");
    }
    const std::string kind = item.substr(0, colon);
    uint32_t id = 0;
    LLMD_RETURN_IF_ERROR(ParseInt(item.substr(colon + 1, eq - colon - 1), &id, 0, 0xFFFFFFFE));
    std::string classes = item.substr(eq + 1);
    const size_t slash = classes.find('/');
    const std::string ceiling_name = slash == std::string::npos ? classes : classes.substr(slash + 1);
    const auto default_class = ParseRequestClass(classes.substr(0, slash));
    const auto ceiling = ParseRequestClass(ceiling_name);
    if (!default_class || !ceiling) {
      return Bad("'" + item + "': a class is interactive, normal or background");
    }
    if (*default_class < *ceiling) {
      return Bad("'" + item + "': the default class is above the ceiling");
    }
    ClassRule rule{.default_class = *default_class, .ceiling = *ceiling};
    if (kind == "uid") rule.uid = id;
    else if (kind == "gid") rule.gid = id;
    else return Bad("'" + item + "': rules name a uid or a gid");
    rules->push_back(rule);
  }
  return Status::Ok();
}

// "background=20000,normal=60000": tokens a minute per peer UID, by class; each class at most once.
Status ParseTokenBudgets(const std::string& v, std::array<uint32_t, kRequestClasses>* budgets) {
  budgets->fill(0);
  for (const std::string& item : SplitList(v)) {
    const size_t eq = item.find('=');
    const auto request_class = ParseRequestClass(item.substr(0, eq));
    if (eq == std::string::npos || !request_class) {
      return Bad("'" + item + "' is not CLASS=TOKENS, CLASS being interactive, normal or background");
    }
    uint32_t& budget = (*budgets)[ClassIndex(*request_class)];
    if (budget != 0) return Bad("'" + item + "': " + RequestClassName(*request_class) + " is given a budget twice");
    LLMD_RETURN_IF_ERROR(ParseInt(item.substr(eq + 1), &budget, 1, 1000000000));
  }
  return Status::Ok();
}

Setter Action(BackgroundAction DaemonConfig::*field) {
  return [=](DaemonConfig& c, const std::string& v) {
    LLMD_ASSIGN_OR_RETURN(c.*field, ParseBackgroundAction(v));
    return Status::Ok();
  };
}

}  // namespace llmd::config
