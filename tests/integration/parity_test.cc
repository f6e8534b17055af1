// Parity: with greedy sampling, llmd's generation path (the embedded engine, LocalEngine, on the
// daemon's scheduler) generates exactly what llama.cpp's own reference program
// (llama-completion, built from the same source) generates, for the same model, prompt and
// thread count. (llama-simple takes no thread count; without OpenMP it starts 4 threads
// per graph on a 2-core machine and runs 50x slower, with the same tokens.) Both sides run
// testing::kEngineThreads.
// Set LLMD_PARITY_PERTURB=1 to change one character of llmd's text before comparing: the test
// must then fail, which shows it can.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "llmd/engine.h"
#include "tests/support/test_models.h"

namespace llmd {
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

// llama-completion's generated text for `prompt`, greedy: stdout minus its closing newlines
// and end-of-text marker.
// `flags`: more sampling flags for llama-completion.
std::string ReferenceOutput(const std::string& model, const std::string& prompt, const std::string& flags = "") {
  std::string cmd = std::string(LLMD_LLAMA_COMPLETION) + " -m " + ShellQuote(model) + " -p " +
                    ShellQuote(prompt) + " -n " + std::to_string(kTokens) + " " + flags +
                    " --temp 0 -t " + std::to_string(testing::kEngineThreads) + " -no-cnv --no-display-prompt --simple-io 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "<popen failed>";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) return "<llama-completion exited with " + std::to_string(rc) + ">";
  // completion.cpp ends with "\n\n", after " [end of text]\n" when the model stopped itself.
  if (!out.ends_with("\n\n")) return "<llama-completion output has no closing newlines>";
  out.resize(out.size() - 2);
  if (out.ends_with(" [end of text]\n")) out.resize(out.size() - 15);
  // llama-completion prints token bytes as they are; llmd never emits invalid UTF-8 (a broken
  // sequence becomes U+FFFD, byte by byte). Compare what a client of each would see.
  Utf8StreamAssembler utf8;
  return utf8.Push(out) + utf8.Finish();
}

class ParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ParityTest, GreedyOutputMatchesLlamaCompletion) {
  const std::string model = GetParam();
  LocalEngineOptions config;
  config.threads = testing::kEngineThreads;
  config.sequences = 1;  // llama-completion's one sequence
  auto engine = LocalEngine::Load(model, config);
  ASSERT_TRUE(engine.has_value()) << engine.error().ToString();
  const LocalGenerateOptions options = LocalGenerateOptions::Greedy(kTokens);

  for (const auto& prompt : kPrompts) {
    (*engine)->Reset();
    // The generated text, as llama-completion prints it: token pieces as they are, control
    // tokens as nothing.
    auto ours = (*engine)->Complete(prompt, options);
    ASSERT_TRUE(ours.has_value()) << ours.error().ToString();
    const LocalStats stats = (*engine)->last_stats();
    EXPECT_EQ(stats.cached_tokens, 0) << "Reset forgets the previous prompt";
    std::string text = *ours;
    if (std::getenv("LLMD_PARITY_PERTURB") != nullptr && !text.empty()) {
      char& c = text[text.size() / 2];
      c = c == ',' ? '-' : ',';
    }
    std::string reference = ReferenceOutput(model, prompt);
    EXPECT_EQ(text, reference) << "prompt: " << prompt << " (" << stats.generated_tokens << " llmd tokens, finish "
                               << stats.finish_reason << ")";
  }
}

// The seed's default repeat_penalty 1.1 and a stronger one, which llmd applies by token id over
// the prompt's last tokens and the generated ones (engine/logit_adjustments.h): the same text
// as llama.cpp's penalties sampler, which sees the prompt too. A random-weight model seldom
// repeats itself, so the prompt is the model's own greedy text followed by its prompt again;
// on this one the continuation picks tokens of the prompt, so the text also differs when the
// prompt is left out of the window (checked by hand: it then differs from llama-completion's).
TEST(ParityWithPenalties, GreedyWithRepeatPenaltiesMatchesLlamaCompletion) {
  const std::string model = testing::TinyModelPath();
  LocalEngineOptions config;
  config.threads = testing::kEngineThreads;
  config.sequences = 1;
  auto engine = LocalEngine::Load(model, config);
  ASSERT_TRUE(engine.has_value()) << engine.error().ToString();
  const std::string& start = kPrompts[3];
  auto first = (*engine)->Complete(start, LocalGenerateOptions::Greedy(kTokens));
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  const std::string prompt = *first + " " + start;
  (*engine)->Reset();
  auto unpenalized = (*engine)->Complete(prompt, LocalGenerateOptions::Greedy(kTokens));
  ASSERT_TRUE(unpenalized.has_value()) << unpenalized.error().ToString();
  for (const float penalty : {1.1f, 1.5f}) {
    LocalGenerateOptions options = LocalGenerateOptions::Greedy(kTokens);
    options.repeat_penalty = penalty;
    (*engine)->Reset();
    auto ours = (*engine)->Complete(prompt, options);
    ASSERT_TRUE(ours.has_value()) << ours.error().ToString();
    EXPECT_NE(*ours, *unpenalized) << "penalty " << penalty << " must change this text, so that the comparison can fail";
    char flags[64];
    std::snprintf(flags, sizeof flags, "--repeat-penalty %.1f --repeat-last-n 64", penalty);
    EXPECT_EQ(*ours, ReferenceOutput(model, prompt, flags)) << "penalty " << penalty << ", prompt: " << prompt;
  }
}

INSTANTIATE_TEST_SUITE_P(SyntheticModels, ParityTest,
                         ::testing::Values(testing::TinyModelPath(), testing::Qwen06bQ4Path(),
                                           testing::Qwen35TinyPath()),
                         [](const auto& info) -> std::string {
                           if (info.param.find("qwen35") != std::string::npos) return "Qwen35Tiny_Hybrid";
                           return info.param.find("tiny") != std::string::npos ? "Tiny" : "Qwen3_06B_Q4_0";
                         });

}  // namespace
}  // namespace llmd
