// OpenAI's /v1/embeddings, parsed and rendered: text inputs (one string or a list), float or
// base64 (little-endian float32, what the openai client asks for by default) encodings. The
// vectors come from a model loaded for embeddings (embedding_models), pooled as its file
// says and L2-normalized.
#ifndef LLMD_HTTP_OPENAI_EMBEDDINGS_API_H_
#define LLMD_HTTP_OPENAI_EMBEDDINGS_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llmd/result.h"

namespace llmd::http {

constexpr size_t kMaxEmbeddingInputs = 256;

struct EmbeddingsRequest {
  std::optional<std::string> model;
  std::vector<std::string> inputs;
  bool base64 = false;              // encoding_format "base64"
  std::optional<int64_t> dimensions;  // must be the model's own when given
};

Result<EmbeddingsRequest> ParseEmbeddingsRequest(std::string_view body);

// The response body: {"object":"list","data":[{"object":"embedding","index":i,"embedding":...}],
// "model":...,"usage":{"prompt_tokens":n,"total_tokens":n}}.
std::string RenderEmbeddings(const std::vector<std::vector<float>>& vectors, bool base64, const std::string& model,
                             int32_t prompt_tokens);

// RFC 4648 base64 of the vector's float32 bytes, little-endian.
std::string Base64Floats(const std::vector<float>& vector);

}  // namespace llmd::http

#endif  // LLMD_HTTP_OPENAI_EMBEDDINGS_API_H_
