// JSON schemas as GBNF grammars, through llama.cpp's json_schema_to_grammar: the one converter
// llmd uses for structured output, so the native socket and the HTTP API accept the same
// schemas and refuse the same ones.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_GRAMMAR_H_
#define LLMD_ENGINE_LLAMA_LLAMA_GRAMMAR_H_

#include <string>
#include <string_view>

#include "llmd/result.h"

namespace llmd::engine {

// The grammar (root rule "root") of JSON text that follows `schema_json`. InvalidArgument
// naming the problem when the text is not JSON or the schema uses what the converter cannot
// express.
Result<std::string> JsonSchemaToGrammar(std::string_view schema_json);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_GRAMMAR_H_
