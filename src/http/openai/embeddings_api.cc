#include "http/openai/embeddings_api.h"

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/utf8.h"

namespace llmd::http {
namespace {

using nlohmann::json;

}  // namespace

Result<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("the request body is not valid JSON");
  if (!j.is_object()) return InvalidArgumentError("the request body must be a JSON object");
  EmbeddingsRequest r;
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) return InvalidArgumentError("'model' must be a string");
    r.model = j["model"].get<std::string>();
  }
  const json* input = j.contains("input") && !j["input"].is_null() ? &j["input"] : nullptr;
  if (input == nullptr) return InvalidArgumentError("'input' is required");
  if (input->is_string()) {
    r.inputs.push_back(input->get<std::string>());
  } else if (input->is_array() && !input->empty() && input->size() <= kMaxEmbeddingInputs) {
    for (const json& item : *input) {
      if (!item.is_string()) {
        return InvalidArgumentError("'input' must be a string or an array of strings (llmd does not take token arrays)");
      }
      r.inputs.push_back(item.get<std::string>());
    }
  } else {
    return InvalidArgumentError("'input' must be a string or an array of 1 to 256 strings");
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    if (r.inputs[i].empty()) return InvalidArgumentError("'input[" + std::to_string(i) + "]' is empty");
    if (!IsValidUtf8(r.inputs[i])) return InvalidArgumentError("'input[" + std::to_string(i) + "]' is not valid UTF-8");
  }
  if (j.contains("encoding_format") && !j["encoding_format"].is_null()) {
    const json& f = j["encoding_format"];
    if (f != "float" && f != "base64") return InvalidArgumentError("'encoding_format' must be float or base64");
    r.base64 = f == "base64";
  }
  if (j.contains("dimensions") && !j["dimensions"].is_null()) {
    if (!j["dimensions"].is_number_integer()) return InvalidArgumentError("'dimensions' must be an integer");
    r.dimensions = j["dimensions"].get<int64_t>();
  }
  return r;
}

std::string Base64Floats(const std::vector<float>& vector) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(vector.size() * sizeof(float), '\0');
  for (size_t i = 0; i < vector.size(); ++i) {
    uint32_t bits = std::bit_cast<uint32_t>(vector[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 0x3F] : '=';
    }
  }
  return out;
}

std::string RenderEmbeddings(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                             int32_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    json embedding = base64 ? json(Base64Floats(vectors[i])) : json(vectors[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  json body = {{"object", "list"},
               {"data", std::move(data)},
               {"model", model},
               {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace llmd::http
