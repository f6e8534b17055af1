// The llama.cpp engine loaded on kEngineThreads for the tests that use it directly (no scheduler,
// no daemon); a load that fails is a test failure, and nullptr.
#ifndef LLMD_TESTS_SUPPORT_LLAMA_TEST_ENGINE_H_
#define LLMD_TESTS_SUPPORT_LLAMA_TEST_ENGINE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/llama/llama_engine.h"
#include "test_models.h"

namespace llmd::testing {

inline std::unique_ptr<engine::Engine> LoadTestEngine(const std::string& path, int32_t context_tokens = 1024,
                                                      int32_t sequences = 1) {
  engine::EngineConfig config;
  config.model_path = path;
  config.context_tokens = context_tokens;
  config.sequences = sequences;
  config.threads = kEngineThreads;
  auto e = engine::NewLlamaEngine();
  const Status s = e->Load(config);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return s.ok() ? std::move(e) : nullptr;
}

}  // namespace llmd::testing

#endif  // LLMD_TESTS_SUPPORT_LLAMA_TEST_ENGINE_H_
