#include "engine/llama/llama_grammar.h"

#include <exception>

#include "json-schema-to-grammar.h"
#include "json.h"

namespace llmd::engine {

Result<std::string> JsonSchemaToGrammar(std::string_view schema_json) {
  common_json schema = common_json::parse_no_throw(std::string(schema_json));
  if (schema.is_discarded() || !schema.is_object()) {
    return InvalidArgumentError("the JSON schema must be a JSON object");
  }
  try {
    return json_schema_to_grammar(schema);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("the JSON schema cannot be enforced: ") + e.what());
  }
}

}  // namespace llmd::engine
