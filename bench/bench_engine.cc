// bench_engine: one streamed generation straight through the engine, no daemon, with its
// stats. The baseline the daemon's overhead is measured against, and a quick way to try a
// model.
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/llama/llama_engine.h"

namespace {

using namespace llmd;

int Fail(const Status& s) {
  std::fprintf(stderr, "bench_engine: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_engine: one streamed generation through the engine directly, with stats."};
  engine::EngineConfig config;
  engine::GenerateOptions options;
  std::string system, prompt = "Introduce yourself in one sentence.";
  bool raw = false, verbose = false, list_devices = false;
  app.add_option("-m,--model,--model-path", config.model_path, "GGUF model file");
  app.add_option("-p,--prompt", prompt, "User message")->capture_default_str();
  app.add_option("--system", system, "System prompt");
  app.add_flag("--raw", raw, "Complete the prompt as plain text, without the chat template");
  app.add_option("-n,--max-tokens", options.max_tokens, "Tokens to generate")
      ->check(CLI::Range(0, 1 << 30))->capture_default_str();
  app.add_option("--temperature", options.sampling.temperature, "0 is greedy (0..2)")
      ->capture_default_str();
  app.add_option("--top-p", options.sampling.top_p, "Nucleus sampling (0..1)")->capture_default_str();
  app.add_option("--top-k", options.sampling.top_k, "Top-k sampling (> 0)")->capture_default_str();
  app.add_option("--repeat-penalty", options.sampling.repeat_penalty, ">= 1")->capture_default_str();
  app.add_option("--seed", options.sampling.seed, "Sampling seed (default: random)");
  app.add_option("-c,--context", config.context_tokens, "Context size in tokens")->capture_default_str();
  app.add_option("-t,--threads", config.threads, "CPU threads (0: all)")->capture_default_str();
  app.add_option("--device", config.devices, "ggml devices to use, e.g. CUDA0 (default: CPU)")
      ->delimiter(',');
  app.add_option("--gpu-layers", config.gpu_layers, "Layers to offload to --device (-1: all)");
  app.add_flag("--list-devices", list_devices, "Print the ggml devices and exit");
  app.add_flag("-v,--verbose", verbose, "Show llama.cpp's own log");
  CLI11_PARSE(app, argc, argv);

  if (list_devices) {
    for (const auto& d : engine::ListLlamaDevices()) std::printf("%s\n", d.c_str());
    return 0;
  }
  if (config.model_path.empty()) {
    std::fprintf(stderr, "bench_engine: --model is required\n%s", app.help().c_str());
    return 2;
  }

  auto engine = engine::NewLlamaEngine(verbose);
  std::fprintf(stderr, "bench_engine: loading %s\n", config.model_path.c_str());
  if (Status s = engine->Load(config); !s.ok()) return Fail(s);
  auto info = engine->model_info();
  std::fprintf(stderr, "bench_engine: loaded %s (%s, context %d) in %.0f ms\n", info.description.c_str(),
               info.has_chat_template ? "model chat template" : "ChatML", info.context_tokens,
               engine->last_stats().load_ms);

  auto print = [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  auto result = raw ? engine->Complete(prompt, options, print)
                    : engine->Generate(system, prompt, options, print);
  std::printf("\n");
  if (!result.has_value()) return Fail(result.error());
  const auto& st = result->stats;
  std::fprintf(stderr,
               "bench_engine: prompt %d tokens (%d cached), prefill %.1f ms (%.1f tok/s), ttft %.1f ms, "
               "generated %d tokens in %.1f ms (%.1f tok/s), finish: %s\n",
               st.prompt_tokens, st.cached_tokens, st.prefill_ms, st.prefill_tokens_per_second(),
               st.ttft_ms, st.generated_tokens, st.decode_ms, st.decode_tokens_per_second(),
               std::string(engine::FinishReasonName(st.finish_reason)).c_str());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::fprintf(stderr, "bench_engine: peak RSS %ld MiB\n", usage.ru_maxrss / 1024);
  return 0;
}
