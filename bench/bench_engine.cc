// bench_engine: one streamed generation through the embedded engine (llmd::LocalEngine), no
// daemon, with its stats. The baseline the daemon's overhead is measured against (the same
// scheduler, without the socket), and a quick way to try a model.
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/llama/llama_engine.h"
#include "llmd/engine.h"

namespace {

using namespace llmd;

int Fail(const Status& s) {
  std::fprintf(stderr, "bench_engine: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_engine: one streamed generation through the embedded engine, with stats."};
  std::string model_path;
  LocalEngineOptions config;
  config.sequences = 1;  // one generation: one sequence of KV cache
  LocalGenerateOptions options;
  std::string system, prompt = "Introduce yourself in one sentence.";
  bool raw = false, list_devices = false;
  app.add_option("-m,--model,--model-path", model_path, "GGUF model file");
  app.add_option("-p,--prompt", prompt, "User message")->capture_default_str();
  app.add_option("--system", system, "System prompt");
  app.add_flag("--raw", raw, "Complete the prompt as plain text, without the chat template");
  app.add_option("-n,--max-tokens", options.max_tokens, "Tokens to generate")
      ->check(CLI::Range(0, 1 << 30))->capture_default_str();
  app.add_option("--temperature", options.temperature, "0 is greedy (0..2)")->capture_default_str();
  app.add_option("--top-p", options.top_p, "Nucleus sampling (0..1)")->capture_default_str();
  app.add_option("--top-k", options.top_k, "Top-k sampling (> 0)")->capture_default_str();
  app.add_option("--repeat-penalty", options.repeat_penalty, ">= 1")->capture_default_str();
  app.add_option("--seed", options.seed, "Sampling seed (default: random)");
  app.add_option("-c,--context", config.context_tokens, "Context size in tokens (per sequence)")
      ->capture_default_str();
  app.add_option("-t,--threads", config.threads, "CPU threads (0: all)")->capture_default_str();
  app.add_option("--sequences", config.sequences, "KV sequences (generations batched together)")
      ->capture_default_str();
  app.add_option("--gpu-layers", config.gpu_layers, "Layers to offload (-1: all)");
  app.add_flag("--list-devices", list_devices, "Print the ggml devices and exit");
  CLI11_PARSE(app, argc, argv);

  if (list_devices) {
    for (const auto& d : engine::ListLlamaDevices()) std::printf("%s\n", d.c_str());
    return 0;
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "bench_engine: --model is required\n%s", app.help().c_str());
    return 2;
  }

  std::fprintf(stderr, "bench_engine: loading %s\n", model_path.c_str());
  auto engine = LocalEngine::Load(model_path, config);
  if (!engine.has_value()) return Fail(engine.error());
  std::fprintf(stderr, "bench_engine: loaded (context %d, %d sequence%s) in %.0f ms\n", config.context_tokens,
               config.sequences, config.sequences == 1 ? "" : "s", (*engine)->last_stats().load_ms);

  auto print = [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  auto result = raw ? (*engine)->Complete(prompt, options, print)
                    : (*engine)->GenerateStream(system, prompt, options, print);
  std::printf("\n");
  if (!result.has_value()) return Fail(result.error());
  const LocalStats st = (*engine)->last_stats();
  const int32_t fresh = st.prompt_tokens - st.cached_tokens;
  const double prefill_tps = fresh > 0 && st.prefill_ms > 0 ? fresh * 1000.0 / st.prefill_ms : 0;
  // The first token comes from the prefill; the rest each cost one decode step.
  const double decode_tps =
      st.generated_tokens > 1 && st.decode_ms > 0 ? (st.generated_tokens - 1) * 1000.0 / st.decode_ms : 0;
  std::fprintf(stderr,
               "bench_engine: prompt %d tokens (%d cached), prefill %.1f ms (%.1f tok/s), ttft %.1f ms, "
               "generated %d tokens in %.1f ms (%.1f tok/s), finish: %s\n",
               st.prompt_tokens, st.cached_tokens, st.prefill_ms, prefill_tps, st.ttft_ms, st.generated_tokens,
               st.decode_ms, decode_tps, st.finish_reason.c_str());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "bench_engine: peak RSS %ld MiB\n", usage.ru_maxrss / 1024);
  return 0;
}
