// sequence_order_probe: what the order of a step's sequences costs in llama.cpp alone. With a
// KV stream per sequence (kv_unified off, as llmd runs), llama.cpp puts only consecutive,
// increasing sequence ids in one micro-batch, so one token each for sequences 3,2,1,0 runs as
// four micro-batches. It prefills 4 sequences and times 40 one-token-per-sequence calls each
// way, interleaved (docs/benchmarks.md, "Concurrent decode: the order of a step's sequences").
//
//   sequence_order_probe MODEL.gguf
#include <chrono>
#include <cstdio>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sequence_order_probe MODEL.gguf\n");
    return 2;
  }
  llama_backend_init();
  auto mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  auto cp = llama_context_default_params();
  cp.n_ctx = 4 * 512; cp.n_seq_max = 4; cp.kv_unified = false; cp.n_threads = 2; cp.n_threads_batch = 2; cp.n_batch = 512; cp.n_ubatch = 512;
  llama_context* ctx = llama_init_from_model(model, cp);
  llama_batch b = llama_batch_init(512, 0, 1);
  auto add = [&](int seq, int pos, int tok, bool logits) { int i = b.n_tokens++; b.token[i] = tok; b.pos[i] = pos; b.n_seq_id[i] = 1; b.seq_id[i][0] = seq; b.logits[i] = logits; };
  for (int s = 0; s < 4; ++s) { b.n_tokens = 0; for (int p = 0; p < 32; ++p) add(s, p, 100 + p + s, p == 31); llama_decode(ctx, b); }
  int pos = 32; double t_desc = 0, t_asc = 0;
  for (int it = 0; it < 40; ++it) {
    for (int order = 0; order < 2; ++order) {
      b.n_tokens = 0;
      for (int k = 0; k < 4; ++k) { int s = order == 0 ? 3 - k : k; add(s, pos, 200 + it, true); }
      auto t0 = std::chrono::steady_clock::now();
      llama_decode(ctx, b);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      (order == 0 ? t_desc : t_asc) += ms;
      ++pos;
    }
  }
  std::printf("per call: sequences 3,2,1,0: %.1f ms; sequences 0,1,2,3: %.1f ms\n", t_desc / 40, t_asc / 40);
  return 0;
}
