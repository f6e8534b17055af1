// Paths of the synthetic models the test fixtures write (see tests/CMakeLists.txt).
#ifndef LLMD_TESTS_SUPPORT_TEST_MODELS_H_
#define LLMD_TESTS_SUPPORT_TEST_MODELS_H_

#include <string>

namespace llmd::testing {

inline std::string TinyModelPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/tiny-q8_0.gguf"; }
// The tiny model with a pooling type, loaded for embeddings (embedding_models).
inline std::string TinyEmbedModelPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/tiny-embed-q8_0.gguf"; }
inline std::string Qwen06bQ4Path() { return std::string(LLMD_TEST_MODEL_DIR) + "/qwen3-0.6b-q4_0.gguf"; }
// The tiny Qwen3.5-shaped hybrid (Gated DeltaNet + attention), the real qwen35 vocabulary and template.
inline std::string Qwen35TinyPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/qwen35-tiny-q8_0.gguf"; }
// The same with one multi-token-prediction block (nextn_predict_layers 1), for speculative = mtp.
inline std::string Qwen35TinyMtpPath() { return std::string(LLMD_TEST_MODEL_DIR) + "/qwen35-tiny-mtp-q8_0.gguf"; }

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_TEST_MODELS_H_
