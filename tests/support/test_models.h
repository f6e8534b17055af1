// Paths of the synthetic models the test fixtures write (see tests/CMakeLists.txt).
#ifndef LLMD_TESTS_SUPPORT_TEST_MODELS_H_
#define LLMD_TESTS_SUPPORT_TEST_MODELS_H_

#include <cstdint>
#include <string>

namespace llmd::testing {

// The compute threads of every engine a test loads, in process or in a daemon: ctest runs two
// tests at once, and a 2-thread ggml pool beside another test's work on two cores spins in its
// barriers (measured 10-20x slower in CI; under ASan the speculative, parity and embedded-engine
// tests took 811 s of test time on 2 threads in the whole suite, 216 s on 1 run by themselves).
// Tests that need more threads say so.
inline constexpr int32_t kEngineThreads = 1;

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
