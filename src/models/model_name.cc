#include "models/model_name.h"

#include <algorithm>
#include <utility>

namespace llmd::models {
namespace {

enum class Part { kNamespace, kModel, kTag };

std::string_view PartName(Part part) {
  switch (part) {
    case Part::kNamespace:
      return "namespace";
    case Part::kModel:
      return "name";
    case Part::kTag:
      return "tag";
  }
  return "part";
}

bool IsAlnumOrUnderscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

Status Invalid(std::string_view text, std::string_view what) {
  return InvalidArgumentError("model name '" + std::string(text) + "' " + std::string(what));
}

// One part's bytes. The first must be a letter, a digit or '_' (so no part is "." or starts
// with "-", which a shell or a file listing would misread); the rest may also be '-' and,
// except in a namespace (Ollama's rule), '.'.
Status CheckPart(std::string_view text, std::string_view part, Part kind) {
  if (part.empty()) return Invalid(text, "has an empty " + std::string(PartName(kind)));
  if (part.size() > kMaxModelNamePartBytes) {
    return Invalid(text, "has a " + std::string(PartName(kind)) + " longer than " +
                             std::to_string(kMaxModelNamePartBytes) + " bytes");
  }
  for (size_t i = 0; i < part.size(); ++i) {
    const char c = part[i];
    if (IsAlnumOrUnderscore(c)) continue;
    const bool allowed = i > 0 && (c == '-' || (c == '.' && kind != Part::kNamespace));
    if (allowed) continue;
    std::string shown = (c >= 0x20 && c < 0x7F)
                            ? std::string(1, c)
                            : "byte " + std::to_string(static_cast<unsigned char>(c));
    if (i == 0) {
      return Invalid(text, "has a " + std::string(PartName(kind)) + " starting with '" + shown +
                               "'; each part starts with a letter, a digit or '_'");
    }
    return Invalid(text,
                   "has '" + shown + "' in its " + std::string(PartName(kind)) +
                       "; names take letters, digits, '_', '-' and '.' (no '.' in a namespace)");
  }
  return Status::Ok();
}

}  // namespace

std::string ModelName::ToString() const {
  std::string out;
  if (!name_space.empty()) out = name_space + "/";
  out += model;
  if (tag != kDefaultTag) out += ":" + tag;
  return out;
}

std::string ModelName::FileName(std::string_view extension) const {
  return ToString() + std::string(extension);
}

Result<ModelName> ParseModelName(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("model name is empty");
  // The checks that keep a name inside its directory come first, with their own words.
  if (text.front() == '/') return Invalid(text, "is an absolute path, not a name");
  if (text.find("..") != std::string_view::npos) return Invalid(text, "contains '..'");
  if (std::count(text.begin(), text.end(), '/') > 1) {
    return Invalid(text, "has more than one '/' (llmd takes [namespace/]name[:tag])");
  }
  if (std::count(text.begin(), text.end(), ':') > 1) return Invalid(text, "has more than one ':'");

  ModelName name;
  std::string_view rest = text;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    LLMD_RETURN_IF_ERROR(CheckPart(text, rest.substr(0, slash), Part::kNamespace));
    name.name_space = std::string(rest.substr(0, slash));
    rest.remove_prefix(slash + 1);
  }
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    LLMD_RETURN_IF_ERROR(CheckPart(text, rest.substr(colon + 1), Part::kTag));
    name.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  LLMD_RETURN_IF_ERROR(CheckPart(text, rest, Part::kModel));
  name.model = std::string(rest);
  return name;
}

bool IsValidNamespace(std::string_view part) {
  return part.find("..") == std::string_view::npos && CheckPart(part, part, Part::kNamespace).ok();
}

Result<std::string> CanonicalModelName(std::string_view text) {
  LLMD_ASSIGN_OR_RETURN(ModelName name, ParseModelName(text));
  return name.ToString();
}

}  // namespace llmd::models
