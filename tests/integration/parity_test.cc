// Parity: with greedy sampling, llmd's engine generates exactly what llama.cpp's own reference
// program (llama-simple, built from the same source) generates, for the same model and prompt.
// Set LLMD_PARITY_PERTURB=1 to change one of llmd's tokens before comparing: the test must
// then fail, which shows it can.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "tests/support/test_models.h"

namespace llmd::engine {
namespace {

constexpr int kTokens = 32;

const std::vector<std::string> kPrompts = {
    "Hello my name is",
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "Les modèles de langage sur l'appareil sont",
};

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// llama-simple's generated text for `prompt`: stdout minus the echoed prompt and the final
// newline.
std::string ReferenceOutput(const std::string& model, const std::string& prompt) {
  std::string cmd = std::string(LLMD_LLAMA_SIMPLE) + " -m " + ShellQuote(model) + " -n " +
                    std::to_string(kTokens) + " " + ShellQuote(prompt) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "<popen failed>";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) return "<llama-simple exited with " + std::to_string(rc) + ">";
  if (!out.starts_with(prompt)) return "<llama-simple did not echo the prompt>";
  out.erase(0, prompt.size());
  if (out.ends_with("\n")) out.pop_back();
  return out;
}

class ParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ParityTest, GreedyOutputMatchesLlamaSimple) {
  const std::string model = GetParam();
  auto engine = NewLlamaEngine();
  EngineConfig config;
  config.model_path = model;
  ASSERT_TRUE(engine->Load(config).ok());
  GenerateOptions options;
  options.max_tokens = kTokens;
  options.sampling = SamplingParams::Greedy();

  for (const auto& prompt : kPrompts) {
    engine->Reset();
    auto ours = engine->Complete(prompt, options);
    ASSERT_TRUE(ours.has_value()) << ours.error().ToString();
    std::vector<TokenId> tokens = ours->tokens;
    if (std::getenv("LLMD_PARITY_PERTURB") != nullptr && tokens.size() > 2) {
      tokens[tokens.size() / 2] = tokens[tokens.size() / 2] == 11 ? 12 : 11;  // ',' or '-'
    }
    // llama-simple prints control tokens too, so compare with them spelled out.
    auto text = engine->Detokenize(tokens, /*render_special=*/true);
    ASSERT_TRUE(text.has_value());
    std::string reference = ReferenceOutput(model, prompt);
    EXPECT_EQ(*text, reference) << "prompt: " << prompt << " (" << tokens.size()
                                << " llmd tokens)";
  }
}

INSTANTIATE_TEST_SUITE_P(SyntheticModels, ParityTest,
                         ::testing::Values(testing::TinyModelPath(), testing::Qwen06bQ4Path()),
                         [](const auto& info) {
                           return info.param.find("tiny") != std::string::npos ? "Tiny" : "Qwen3_06B_Q4_0";
                         });

}  // namespace
}  // namespace llmd::engine
