// The value parsers and setters behind config.cc's key table: each turns a setting's text
// (from TOML, a flag or the environment) into a DaemonConfig field, or says why it cannot.
// Internal to src/config.
#ifndef LLMD_CONFIG_CONFIG_VALUES_H_
#define LLMD_CONFIG_CONFIG_VALUES_H_

#include <array>
#include <charconv>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace llmd::config {

// Sets one field of the config from a setting's text.
using Setter = std::function<Status(DaemonConfig&, const std::string&)>;

Status Bad(const std::string& why);

template <typename T>
Status ParseInt(const std::string& s, T* out, long long lo, long long hi) {
  long long v;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return Bad("not an integer");
  if (v < lo || v > hi) {
    return Bad("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<T>(v);
  return Status::Ok();
}

Status ParseFloat(const std::string& s, float* out, float lo, float hi, const char* range);
Status ParseBool(const std::string& s, bool* out);
// A pinned system prompt: the text itself, or "@PATH" for a file's text.
Status AddPinnedPrompt(const std::string& v, std::vector<std::string>* prompts);
// Comma-separated items, empty ones dropped.
std::vector<std::string> SplitList(const std::string& s);
// "uid:1001=interactive", "gid:50=background/normal", comma-separated.
Status ParseClassRules(const std::string& v, std::vector<ClassRule>* rules);
// "background=20000,normal=60000": tokens a minute per peer UID, by class.
Status ParseTokenBudgets(const std::string& v, std::array<uint32_t, kRequestClasses>* budgets);

Setter U32(uint32_t DaemonConfig::*field, long long lo, long long hi);
// A duration of at least 0 ("0": never), up to a year.
Setter Duration(int64_t DaemonConfig::*field);
Setter Str(std::string DaemonConfig::*field);
// Comma-separated UIDs or GIDs.
Setter IdList(std::vector<uint32_t> DaemonConfig::*field);
// run, throttle or pause.
Setter Action(BackgroundAction DaemonConfig::*field);

}  // namespace llmd::config

#endif  // LLMD_CONFIG_CONFIG_VALUES_H_
