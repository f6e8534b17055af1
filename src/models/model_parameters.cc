#include "models/model_parameters.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace llmd::models {
namespace {

enum class Kind { kInteger, kNumber, kString };

struct Spec {
  std::string_view key;
  Kind kind;
  double min = 0, max = 0;     // kNumber
  int64_t imin = 0, imax = 0;  // kInteger
};

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// The ranges of llmd's Ollama API (src/http/ollama/ollama_api.cc, ReadOptions), which these
// defaults stand in for.
constexpr Spec kSpecs[] = {
    {"num_ctx", Kind::kInteger, 0, 0, 1, std::numeric_limits<int32_t>::max()},
    {"num_predict", Kind::kInteger, 0, 0, -2, std::numeric_limits<uint32_t>::max()},
    {"temperature", Kind::kNumber, 0, 2},
    {"top_p", Kind::kNumber, 0, 1},
    {"top_k", Kind::kInteger, 0, 0, 1, 1 << 20},
    {"repeat_penalty", Kind::kNumber, 1, 10},
    {"presence_penalty", Kind::kNumber, -2, 2},
    {"frequency_penalty", Kind::kNumber, -2, 2},
    {"seed", Kind::kInteger, 0, 0, kInt64Min, kInt64Max},
    {"stop", Kind::kString},
};

const Spec* FindSpec(std::string_view key) {
  for (const Spec& spec : kSpecs) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

Status Bad(std::string_view key, const std::string& what) {
  return InvalidArgumentError("PARAMETER " + std::string(key) + " " + what);
}

Status UnknownKey(std::string_view key) {
  std::string known;
  for (const Spec& spec : kSpecs) {
    if (!known.empty()) known += ", ";
    known += spec.key;
  }
  return InvalidArgumentError("unknown PARAMETER '" + std::string(key) + "'; llmd knows " + known);
}

// Checks a typed value against its spec, converting between the two numeric kinds.
Result<ParameterValue> Checked(const Spec& spec, const ParameterValue& value) {
  switch (spec.kind) {
    case Kind::kString: {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) return Bad(spec.key, "must be a string");
      if (s->empty()) return Bad(spec.key, "must not be empty");
      if (s->size() > kMaxStopParameterBytes) {
        return Bad(spec.key,
                   "must be at most " + std::to_string(kMaxStopParameterBytes) + " bytes");
      }
      return value;
    }
    case Kind::kNumber: {
      double d = 0;
      if (const auto* i = std::get_if<int64_t>(&value)) {
        d = static_cast<double>(*i);
      } else if (const auto* f = std::get_if<double>(&value)) {
        d = *f;
      } else {
        return Bad(spec.key, "must be a number");
      }
      if (!std::isfinite(d) || d < spec.min || d > spec.max) {
        return Bad(spec.key, "must be in " + FormatParameterValue(spec.min) + ".." +
                                 FormatParameterValue(spec.max) + ", not " +
                                 FormatParameterValue(d));
      }
      return ParameterValue(d);
    }
    case Kind::kInteger: {
      int64_t i = 0;
      if (const auto* n = std::get_if<int64_t>(&value)) {
        i = *n;
      } else if (const auto* f = std::get_if<double>(&value);
                 f != nullptr && std::trunc(*f) == *f && std::fabs(*f) < 9.2e18) {
        i = static_cast<int64_t>(*f);
      } else {
        return Bad(spec.key, "must be an integer");
      }
      if (i < spec.imin || i > spec.imax) {
        return Bad(spec.key, "must be in " + std::to_string(spec.imin) + ".." +
                                 std::to_string(spec.imax) + ", not " + std::to_string(i));
      }
      return ParameterValue(i);
    }
  }
  return InternalError("unhandled parameter kind");
}

// The text of a value, read as the key's kind wants it: the whole text, nothing left over.
Result<ParameterValue> ParseText(const Spec& spec, std::string_view text) {
  const char* end = text.data() + text.size();
  switch (spec.kind) {
    case Kind::kString:
      return ParameterValue(std::string(text));
    case Kind::kInteger: {
      int64_t i = 0;
      auto [ptr, ec] = std::from_chars(text.data(), end, i);
      if (ec == std::errc::result_out_of_range) {
        return Bad(spec.key, "is out of range: '" + std::string(text) + "'");
      }
      if (ec != std::errc() || ptr != end || text.empty()) {
        return Bad(spec.key, "must be an integer, not '" + std::string(text) + "'");
      }
      return ParameterValue(i);
    }
    case Kind::kNumber: {
      double d = 0;
      auto [ptr, ec] = std::from_chars(text.data(), end, d);
      if (ec != std::errc() || ptr != end || text.empty()) {
        return Bad(spec.key, "must be a number, not '" + std::string(text) + "'");
      }
      return ParameterValue(d);
    }
  }
  return InternalError("unhandled parameter kind");
}

}  // namespace

Status ModelParameters::Add(std::string_view key, std::string_view text) {
  const Spec* spec = FindSpec(key);
  if (spec == nullptr) return UnknownKey(key);
  LLMD_ASSIGN_OR_RETURN(ParameterValue value, ParseText(*spec, text));
  return AddValue(key, value);
}

Status ModelParameters::AddValue(std::string_view key, const ParameterValue& value) {
  const Spec* spec = FindSpec(key);
  if (spec == nullptr) return UnknownKey(key);
  LLMD_ASSIGN_OR_RETURN(ParameterValue checked, Checked(*spec, value));
  if (spec->kind == Kind::kString) {
    if (Strings(key).size() >= kMaxStopParameters) {
      return Bad(key, "may be given at most " + std::to_string(kMaxStopParameters) + " times");
    }
  } else if (Has(key)) {
    // Ollama keeps one of two values silently; a manifest that says two things is a mistake.
    return Bad(key, "is set twice");
  }
  items_.push_back(Parameter{std::string(key), std::move(checked)});
  return Status::Ok();
}

ModelParameters ModelParameters::OverriddenBy(const ModelParameters& over) const {
  ModelParameters out;
  for (const Parameter& p : items_) {
    if (!over.Has(p.key)) out.items_.push_back(p);
  }
  for (const Parameter& p : over.items_) out.items_.push_back(p);
  return out;
}

bool ModelParameters::Has(std::string_view key) const {
  for (const Parameter& p : items_) {
    if (p.key == key) return true;
  }
  return false;
}

std::optional<double> ModelParameters::Number(std::string_view key) const {
  for (const Parameter& p : items_) {
    if (p.key != key) continue;
    if (const auto* d = std::get_if<double>(&p.value)) return *d;
    if (const auto* i = std::get_if<int64_t>(&p.value)) return static_cast<double>(*i);
  }
  return std::nullopt;
}

std::optional<int64_t> ModelParameters::Integer(std::string_view key) const {
  for (const Parameter& p : items_) {
    if (p.key != key) continue;
    if (const auto* i = std::get_if<int64_t>(&p.value)) return *i;
  }
  return std::nullopt;
}

std::vector<std::string> ModelParameters::Strings(std::string_view key) const {
  std::vector<std::string> out;
  for (const Parameter& p : items_) {
    if (p.key != key) continue;
    if (const auto* s = std::get_if<std::string>(&p.value)) out.push_back(*s);
  }
  return out;
}

std::vector<std::string_view> KnownParameterKeys() {
  std::vector<std::string_view> keys;
  for (const Spec& spec : kSpecs) keys.push_back(spec.key);
  return keys;
}

std::string FormatParameterValue(const ParameterValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, std::get<double>(value));
  return ec == std::errc() ? std::string(buf, ptr) : "nan";
}

}  // namespace llmd::models
