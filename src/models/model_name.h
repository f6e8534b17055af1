// Model names as Ollama accepts them: `name` or `name:tag`, with at most one `namespace/`
// in front ("library/qwen3:8b"). A name is also a path below a models directory
// (`<dir>/<namespace>/<name>[:<tag>].<ext>`), so whatever could leave that directory is
// refused here, once, before any code builds a path from it: `..`, a leading `/`, empty parts,
// a second `/`, and every byte but letters, digits, `_`, `-` and `.`.
//
// Two forms name one model: "qwen3" and "qwen3:latest" (ToString() drops ":latest"). Names
// are compared as bytes (Ollama folds case; a Linux directory can hold "Qwen3.gguf" and
// "qwen3.gguf" as two files, so llmd keeps them two models).
//
// Thread-safety: pure functions and a value type.
#ifndef LLMD_MODELS_MODEL_NAME_H_
#define LLMD_MODELS_MODEL_NAME_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::models {

// Ollama's limit for one part (namespace, name or tag); with it a whole name, and the file
// named after it ("ns/name:tag.modelfile"), stays far below NAME_MAX.
inline constexpr size_t kMaxModelNamePartBytes = 80;
inline constexpr std::string_view kDefaultTag = "latest";

struct ModelName {
  std::string name_space;  // "" when the name has none
  std::string model;
  std::string tag = std::string(kDefaultTag);

  // The canonical form: "model", "model:tag", "ns/model", "ns/model:tag"; ":latest" left out.
  std::string ToString() const;
  // The file below a models directory that holds this model, e.g. "ns/model:tag.gguf" for
  // extension ".gguf". Safe to append to a directory: every part was checked.
  std::string FileName(std::string_view extension) const;

  friend bool operator==(const ModelName&, const ModelName&) = default;
};

// Parses and checks `text`. InvalidArgument with a message that quotes the name and says what
// is wrong, e.g. "model name 'a/../b' contains '..'".
Result<ModelName> ParseModelName(std::string_view text);

// Whether `part` may be a namespace (the folder a namespaced model's files are in).
bool IsValidNamespace(std::string_view part);

// The canonical form of `text` (ToString of its parse); the parse error otherwise.
Result<std::string> CanonicalModelName(std::string_view text);

}  // namespace llmd::models

#endif  // LLMD_MODELS_MODEL_NAME_H_
