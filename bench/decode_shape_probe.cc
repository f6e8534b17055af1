// decode_shape_probe: does this machine's llama.cpp arithmetic depend on how a prompt is cut
// into decode calls? llama.cpp alone, no llmd. For a chat prompt it decodes the prompt whole,
// then cut in other places, and compares the last prompt token's logits bit for bit and the
// greedy tokens after them; then it restores a recurrent-state checkpoint (hybrid models) at a
// few positions, after a first request, and prefills the rest as llmd's prefix reuse does,
// which must give the tokens of the cold run cut at the same place.
//
//   decode_shape_probe MODEL.gguf [THREADS]
//
// Kernels that compute a row the same in any call print "max diff 0" everywhere; where a line
// shows a difference, prefix reuse is exact only if the cached path repeats the cold path's
// cuts (docs/architecture.md, "What the cached path guarantees").
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

namespace {

constexpr int kGenerated = 24;

struct Probe {
  llama_context* ctx = nullptr;
  int n_vocab = 0;

  void Decode(int seq, const std::vector<llama_token>& t, int from, int to) {
    llama_batch b = llama_batch_init(to - from, 0, 1);
    for (int i = from; i < to; ++i) {
      const int n = i - from;
      b.token[n] = t[i];
      b.pos[n] = i;
      b.n_seq_id[n] = 1;
      b.seq_id[n][0] = seq;
      b.logits[n] = i == to - 1;
    }
    b.n_tokens = to - from;
    if (llama_decode(ctx, b) != 0) std::fprintf(stderr, "llama_decode failed\n");
    llama_batch_free(b);
  }
  std::vector<float> Logits() const {
    const float* l = llama_get_logits_ith(ctx, -1);
    return {l, l + n_vocab};
  }
  // Greedy tokens after the prompt, one decode each, on `seq`.
  std::vector<llama_token> Generate(int seq, std::vector<llama_token> all, int n) {
    std::vector<llama_token> out;
    std::vector<float> l = Logits();
    for (int i = 0; i < n; ++i) {
      int best = 0;
      for (int v = 1; v < n_vocab; ++v) best = l[v] > l[best] ? v : best;
      out.push_back(best);
      all.push_back(best);
      Decode(seq, all, static_cast<int>(all.size()) - 1, static_cast<int>(all.size()));
      l = Logits();
    }
    return out;
  }
  // The prompt decoded in pieces ending at `cuts`, then greedy tokens.
  std::vector<llama_token> Run(const std::vector<llama_token>& p, std::vector<int> cuts, std::vector<float>* logits) {
    llama_memory_clear(llama_get_memory(ctx), true);
    cuts.push_back(static_cast<int>(p.size()));
    int from = 0;
    for (int c : cuts) {
      Decode(0, p, from, c);
      from = c;
    }
    *logits = Logits();
    return Generate(0, p, kGenerated);
  }
  // A first request with a checkpoint at `at`, 15 tokens generated; then the same prompt
  // restored from the checkpoint, the attention trimmed to it, the rest prefilled.
  std::vector<llama_token> FromCheckpoint(const std::vector<llama_token>& p, int at) {
    llama_memory_clear(llama_get_memory(ctx), true);
    Decode(0, p, 0, at);
    std::vector<uint8_t> state(llama_state_seq_get_size_ext(ctx, 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY));
    llama_state_seq_get_data_ext(ctx, state.data(), state.size(), 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
    Decode(0, p, at, static_cast<int>(p.size()));
    (void)Generate(0, p, 15);
    if (llama_state_seq_set_data_ext(ctx, state.data(), state.size(), 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) == 0 ||
        !llama_memory_seq_rm(llama_get_memory(ctx), 0, at, -1)) {
      std::fprintf(stderr, "checkpoint restore failed\n");
    }
    Decode(0, p, at, static_cast<int>(p.size()));
    return Generate(0, p, kGenerated);
  }
};

size_t Agree(const std::vector<llama_token>& a, const std::vector<llama_token>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: decode_shape_probe MODEL.gguf [THREADS]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 2048;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_seq_max = 4;
  cp.n_threads = cp.n_threads_batch = threads;
  Probe probe;
  probe.ctx = llama_init_from_model(model, cp);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  probe.n_vocab = llama_vocab_n_tokens(vocab);
  const std::string text =
      "<|im_start|>system\nBe brief and kind.<|im_end|>\n<|im_start|>user\nSay hi.<|im_end|>\n"
      "<|im_start|>assistant\n";
  std::vector<llama_token> p(512);
  p.resize(llama_tokenize(vocab, text.c_str(), static_cast<int32_t>(text.size()), p.data(),
                          static_cast<int32_t>(p.size()), false, true));
  const int n = static_cast<int>(p.size());
  std::printf("%s, %d threads, prompt of %d tokens\n", argv[1], threads, n);

  std::vector<float> cold_logits;
  const std::vector<llama_token> cold = probe.Run(p, {}, &cold_logits);
  const std::vector<std::vector<int>> variants = {{n - 1}, {n - 3}, {n - 8, n - 1}, {9}, {5, 10, 15}};
  for (const auto& cuts : variants) {
    std::vector<float> logits;
    const std::vector<llama_token> got = probe.Run(p, cuts, &logits);
    double diff = 0;
    for (int v = 0; v < probe.n_vocab; ++v) diff = std::max(diff, static_cast<double>(std::fabs(logits[v] - cold_logits[v])));
    std::printf("cut at");
    for (int c : cuts) std::printf(" %d", c);
    std::printf(": last prompt token's logits max diff %.3g; greedy tokens agree for %zu of %d\n", diff,
                Agree(got, cold), kGenerated);
  }
  if (llama_model_is_hybrid(model) || llama_model_is_recurrent(model)) {
    for (int at : {n - 1, n - 3, n - 8}) {
      std::vector<float> logits;
      const std::vector<llama_token> same_cut = probe.Run(p, {at}, &logits);
      std::printf("checkpoint at %d restored after a first request: greedy tokens agree with the cold run cut "
                  "there for %zu of %d\n",
                  at, Agree(probe.FromCheckpoint(p, at), same_cut), kGenerated);
    }
  }
  llama_free(probe.ctx);
  llama_model_free(model);
  return 0;
}
