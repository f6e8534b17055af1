// sequence_move_probe: what moving a running sequence next to the others costs, against what
// the gap it closes costs every step. With a KV stream per sequence (kv_unified off, as llmd
// runs) llama.cpp computes each run of consecutive sequence ids of a call as a micro-batch of
// its own, so one token each for sequences 0,1,2 and 4 is two passes over the weights where
// 0,1,2,3 is one. The probe prefills five sequences, times 40 calls of each shape
// (interleaved), then times copying sequence 4's cells into an empty sequence 3 through the
// per-sequence state API (what the worker's move does, Engine::CopySequence) at several
// lengths (docs/architecture.md: the worker moves a slot only where this pays).
//
//   sequence_move_probe MODEL.gguf [THREADS]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "llama.h"

namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sequence_move_probe MODEL.gguf [THREADS]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  constexpr int kSequences = 5, kPerSequence = 4096, kBatch = 512;
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  auto cp = llama_context_default_params();
  cp.n_ctx = kSequences * kPerSequence;
  cp.n_seq_max = kSequences;
  cp.kv_unified = false;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.n_batch = cp.n_ubatch = kBatch;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  llama_memory_t mem = llama_get_memory(ctx);
  llama_batch b = llama_batch_init(kBatch, 0, 1);
  auto add = [&](int seq, int pos, int tok, bool logits) {
    const int i = b.n_tokens++;
    b.token[i] = tok; b.pos[i] = pos; b.n_seq_id[i] = 1; b.seq_id[i][0] = seq; b.logits[i] = logits;
  };
  // Sequence `seq` filled to `length` tokens in prompt calls.
  auto fill = [&](int seq, int length) {
    llama_memory_seq_rm(mem, seq, -1, -1);
    for (int start = 0; start < length; start += kBatch) {
      b.n_tokens = 0;
      for (int p = start; p < length && p < start + kBatch; ++p) add(seq, p, 100 + (p * 7 + seq) % 1000, p + 1 == length);
      if (llama_decode(ctx, b) != 0) std::exit(1);
    }
  };
  constexpr int kDepth = 128;  // a short running request and its neighbours
  for (int s = 0; s < kSequences; ++s) fill(s, kDepth);
  std::vector<int> next(kSequences, kDepth);  // each sequence's next position
  double split = 0, joined = 0;
  constexpr int kCalls = 40;
  for (int it = 0; it < kCalls; ++it) {
    for (int shape = 0; shape < 2; ++shape) {
      b.n_tokens = 0;
      for (int s : {0, 1, 2, shape == 0 ? 4 : 3}) add(s, next[static_cast<size_t>(s)]++, 200 + it, true);
      const auto t0 = std::chrono::steady_clock::now();
      if (llama_decode(ctx, b) != 0) return 1;
      (shape == 0 ? split : joined) += MsSince(t0);
    }
  }
  std::printf("decode call, one token each: sequences 0,1,2,4: %.1f ms; 0,1,2,3: %.1f ms; the gap: %.1f ms a step\n",
              split / kCalls, joined / kCalls, (split - joined) / kCalls);
  for (int length : {128, 512, 2048}) {
    fill(4, length);
    double ms = 0;
    constexpr int kCopies = 5;
    for (int k = 0; k < kCopies; ++k) {
      llama_memory_seq_rm(mem, 3, -1, -1);
      const auto t0 = std::chrono::steady_clock::now();
      const size_t size = llama_state_seq_get_size_ext(ctx, 4, 0);
      std::vector<uint8_t> state(size);
      const size_t got = llama_state_seq_get_data_ext(ctx, state.data(), size, 4, 0);
      if (got == 0 || llama_state_seq_set_data_ext(ctx, state.data(), got, 3, 0) == 0) return 1;
      ms += MsSince(t0);
    }
    std::printf("move of %d tokens (%.1f MiB): %.1f ms\n", length,
                static_cast<double>(llama_state_seq_get_size_ext(ctx, 4, 0)) / (1 << 20), ms / kCopies);
  }
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
