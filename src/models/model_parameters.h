// A model's default generation settings, as a manifest's `PARAMETER <key> <value>` lines set
// them (Ollama's Modelfile keys). Every value is typed and checked against its key's range
// when it is added, so whatever applies the defaults later never sees a bad one; a key llmd
// does not know is refused by name, with the list of those it knows.
//
// The keys, their types and ranges are those llmd's Ollama API accepts in a request's
// `options`, so a default is never one a request could not send:
//   num_ctx            integer  1 .. 2^31-1
//   num_predict        integer  -2 .. 2^32-1 (-1: no limit, -2: fill the context)
//   temperature        number   0 .. 2
//   top_p              number   0 .. 1
//   top_k              integer  1 .. 2^20
//   repeat_penalty     number   1 .. 10
//   presence_penalty   number   -2 .. 2
//   frequency_penalty  number   -2 .. 2
//   seed               integer  any 64-bit value (-1: random)
//   stop               string   1 .. 256 bytes; repeatable, at most 4 (a request's own cap)
// A key other than `stop` may be set once.
//
// Thread-safety: a value type.
#ifndef LLMD_MODELS_MODEL_PARAMETERS_H_
#define LLMD_MODELS_MODEL_PARAMETERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "llmd/result.h"

namespace llmd::models {

inline constexpr size_t kMaxStopParameters = 4;
inline constexpr size_t kMaxStopParameterBytes = 256;

// An integer key's value is an int64_t, a number key's a double, `stop`'s a std::string.
using ParameterValue = std::variant<int64_t, double, std::string>;

struct Parameter {
  std::string key;
  ParameterValue value;
  friend bool operator==(const Parameter&, const Parameter&) = default;
};

class ModelParameters {
 public:
  // Parses `text` (the value as a Modelfile writes it, quotes already removed) for `key` and
  // adds it. InvalidArgument naming the key: unknown, not a number, out of range, set twice.
  Status Add(std::string_view key, std::string_view text);
  // Adds a value already typed (an API's JSON number); the same checks. An integer is taken
  // for a number key; a whole double for an integer key.
  Status AddValue(std::string_view key, const ParameterValue& value);

  // This with every key `over` sets replaced by its values there (all of a key's values: a
  // manifest's `stop` list replaces its base's, as Ollama's derived models do).
  ModelParameters OverriddenBy(const ModelParameters& over) const;

  // In the order they were added.
  const std::vector<Parameter>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool Has(std::string_view key) const;
  // A number key's value (an integer key's too, converted); none when unset.
  std::optional<double> Number(std::string_view key) const;
  std::optional<int64_t> Integer(std::string_view key) const;
  // Every value of a string key (`stop`), in order.
  std::vector<std::string> Strings(std::string_view key) const;

  friend bool operator==(const ModelParameters&, const ModelParameters&) = default;

 private:
  std::vector<Parameter> items_;
};

// The keys llmd knows, in the order of the table above.
std::vector<std::string_view> KnownParameterKeys();

// `value` as a Modelfile writes it, unquoted: "40", "0.7" (the shortest text that reads back
// as the same double), the string itself.
std::string FormatParameterValue(const ParameterValue& value);

}  // namespace llmd::models

#endif  // LLMD_MODELS_MODEL_PARAMETERS_H_
