// A model's manifest: `<name>.modelfile` beside the GGUF files in a models directory, in
// Ollama's Modelfile syntax, giving the model its weights and its defaults. One instruction
// a line, the instruction's word in any case, `#` at the start of a line a comment:
//
//   FROM <file>.gguf | <model name>   the weights: a GGUF file in the manifest's own directory
//                                     ("./" allowed in front; no other path), or another
//                                     model, whose weights and defaults this one starts from
//   SYSTEM <text>                     the default system prompt
//   TEMPLATE <text>                   a chat template that replaces the GGUF's own: Jinja,
//                                     as the GGUF's is written; Ollama's Go templates are
//                                     refused (chat_template_syntax.h)
//   PARAMETER <key> <value>           a default setting (model_parameters.h has the keys)
//   EMBEDDING true | false            llmd's own: whether the model serves embeddings
//                                     (/api/embed, /v1/embeddings) rather than generation
//
// A value is the rest of its line, with the spaces around it dropped, or quoted: `"..."` or
// `"""..."""`, either of which may run over several lines and ends on the first line that
// ends with its closing quotes; what lies between the quotes is the value, byte for byte
// (Ollama's rules: no escapes). FROM is required; every other instruction but
// `PARAMETER stop` may appear once. Ollama's ADAPTER, MESSAGE, LICENSE, DRAFT, RENDERER,
// PARSER and REQUIRES are refused by name: llmd does not do what they ask.
//
// Parse errors are InvalidArgument and start with "<file>:<line>: " (only "<file>: " for a
// manifest with no FROM at all).
//
// Thread-safety: pure functions and value types; ReadModelfile only reads its file.
#ifndef LLMD_MODELS_MODELFILE_H_
#define LLMD_MODELS_MODELFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmd/result.h"
#include "models/model_name.h"
#include "models/model_parameters.h"

namespace llmd::models {

// A manifest is text a person writes; a chat template can be long (format/gguf_metadata.h
// shows templates up to 1 MiB), a manifest holding one a little longer.
inline constexpr uint64_t kMaxModelfileBytes = 2 << 20;
inline constexpr std::string_view kModelfileExtension = ".modelfile";
inline constexpr std::string_view kGgufExtension = ".gguf";

// What a model serves by default, beyond its weights. Unset fields: the GGUF's own (its chat
// template), the server's (sampling) or "no system prompt".
struct ModelDefaults {
  std::optional<std::string> system;
  std::optional<std::string> chat_template;
  ModelParameters parameters;
  std::optional<bool> embedding;

  // These defaults with every field `over` sets replacing this one's (a derived model's
  // manifest over its base's), parameters key by key (ModelParameters::OverriddenBy).
  ModelDefaults OverriddenBy(const ModelDefaults& over) const;
  friend bool operator==(const ModelDefaults&, const ModelDefaults&) = default;
};

struct Manifest {
  std::string from;  // as written, "./" dropped
  ModelDefaults defaults;
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// What a FROM names.
struct FromTarget {
  enum class Kind { kFile, kModel };
  Kind kind = Kind::kFile;
  std::string file;  // kFile: a file name ending in ".gguf", no '/'
  ModelName model;   // kModel
};

// Classifies `from`: a name ending in ".gguf" is a file in the manifest's directory (a plain
// file name: a path, "..", a hidden name are refused); anything else must be a model name.
Result<FromTarget> ParseFrom(std::string_view from);

// Parses a manifest's text; `file_name` names it in errors ("/m/qwen3-chat.modelfile:4: ...").
// A UTF-8 byte-order mark and CRLF line ends are accepted; a NUL byte is not.
Result<Manifest> ParseModelfile(std::string_view text, std::string_view file_name);

// Reads and parses the manifest at `path` (a regular file of at most kMaxModelfileBytes;
// NotFound when missing); errors name the path.
Result<Manifest> ReadModelfile(const std::string& path);

// The manifest as text ParseModelfile reads back to an equal Manifest: FROM, SYSTEM, TEMPLATE,
// each PARAMETER in order, EMBEDDING. A value is written bare when it can be, else in
// `"""` quotes. InvalidArgument when a value cannot be written so that it reads back the same
// (a FROM that ParseFrom refuses; a text with a carriage return before a line end, or a line
// but its last ending in `"""`).
Result<std::string> RenderModelfile(const Manifest& manifest);

}  // namespace llmd::models

#endif  // LLMD_MODELS_MODELFILE_H_
