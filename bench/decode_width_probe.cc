// decode_width_probe: what one decode call costs in llama.cpp alone with 1 to 8 sequences, one
// token each (a KV stream per sequence, as llmd runs; consecutive sequence ids, one
// micro-batch). ggml's repacked CPU matrix kernels compute rows in tiles of four and each row
// left over on its own (ggml-cpu/repack.cpp: gemm for ne11 - ne11 % 4 rows, then a gemv per
// row), each a pass over the weights: this shows what a step of 3 or 5 sequences costs
// against one of 4 (docs/benchmarks.md, "Request classes"). Widths interleaved, 30 calls each.
//
//   decode_width_probe MODEL.gguf [THREADS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: decode_width_probe MODEL.gguf [THREADS]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  constexpr int kMaxWidth = 8, kCalls = 30, kPrompt = 32;
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  auto cp = llama_context_default_params();
  cp.n_ctx = kMaxWidth * 512;
  cp.n_seq_max = kMaxWidth;
  cp.kv_unified = false;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.n_batch = cp.n_ubatch = 512;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  llama_batch b = llama_batch_init(512, 0, 1);
  auto add = [&](int seq, int pos, int tok) {
    const int i = b.n_tokens++;
    b.token[i] = tok;
    b.pos[i] = pos;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = seq;
    b.logits[i] = true;
  };
  for (int s = 0; s < kMaxWidth; ++s) {
    b.n_tokens = 0;
    for (int p = 0; p < kPrompt; ++p) add(s, p, 100 + p + s);
    if (llama_decode(ctx, b) != 0) return 1;
  }
  double total[kMaxWidth + 1] = {};
  for (int call = 0; call < kCalls; ++call) {
    for (int width = 1; width <= kMaxWidth; ++width) {
      // Each width decodes one token on sequences 0..width-1; every sequence is cut back to
      // its prompt first, so all calls run at the same depth.
      for (int s = 0; s < width; ++s) llama_memory_seq_rm(llama_get_memory(ctx), s, kPrompt, -1);
      b.n_tokens = 0;
      for (int s = 0; s < width; ++s) add(s, kPrompt, 200 + call);
      const auto t0 = std::chrono::steady_clock::now();
      if (llama_decode(ctx, b) != 0) return 1;
      total[width] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  std::printf("sequences  ms/call  ms/token\n");
  for (int width = 1; width <= kMaxWidth; ++width) {
    std::printf("%9d  %7.1f  %8.1f\n", width, total[width] / kCalls, total[width] / kCalls / width);
  }
  return 0;
}
