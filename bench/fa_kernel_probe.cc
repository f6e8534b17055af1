// fa_kernel_probe: what a prompt call of a few rows costs at depth under each of ggml-cpu's
// flash attention kernels (llama.cpp patch 0004 lets the caller choose), to choose from which
// row count a prompt's micro-batch takes the tiled kernel (engine/prompt_kernels.h). llama.cpp
// alone, no llmd. It fills one sequence to DEPTH tokens, then for each row count times a call
// of that many rows at DEPTH, row by row and tiled in alternating order, the call's cells
// dropped after each (a hybrid model's recurrent state cannot drop them: there each call goes
// on after the last, a few hundred cells deeper by the end), and prints the medians.
//
//   fa_kernel_probe MODEL.gguf DEPTH [THREADS] [REPS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ggml-cpu.h"
#include "llama.h"

namespace {

bool Decode(llama_context* ctx, int from, int rows, int vocab) {
  llama_batch b = llama_batch_init(rows, 0, 1);
  for (int i = 0; i < rows; ++i) {
    b.token[i] = (from + i) * 7919 % vocab;
    b.pos[i] = from + i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = i == rows - 1;
  }
  b.n_tokens = rows;
  const bool ok = llama_decode(ctx, b) == 0;
  llama_batch_free(b);
  return ok;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fa_kernel_probe MODEL.gguf DEPTH [THREADS] [REPS]\n");
    return 2;
  }
  const int depth = std::atoi(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 3;
  if (depth < 1 || threads < 1 || reps < 1) {
    std::fprintf(stderr, "DEPTH, THREADS and REPS must be at least 1\n");
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (model == nullptr) return 1;
  llama_context_params cp = llama_context_default_params();
  constexpr int kRowsTried = 1 + 2 + 3 + 4 + 6 + 8 + 12 + 16 + 24 + 32 + 48 + 63;  // the calls below, once each
  cp.n_ctx = static_cast<uint32_t>(depth + 128 + 2 * reps * kRowsTried);
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) return 1;
  ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
  ggml_threadpool* pool = ggml_threadpool_new(&tpp);
  llama_attach_threadpool(ctx, pool, pool);
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (int at = 0; at < depth; at += 512) {
    if (!Decode(ctx, at, std::min(512, depth - at), vocab)) return 1;
  }
  std::printf("depth %d, %d threads, median of %d calls\nrows  row-by-row ms  tiled ms  tiled/row-by-row\n",
              depth, threads, reps);
  int at = depth;  // where the next call goes
  for (int rows : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 63}) {
    std::vector<double> ms[2];
    for (int r = 0; r < reps * 2; ++r) {
      const int k = (r + r / 2) % 2;  // ABBA: row by row first in even pairs
      ggml_threadpool_set_flash_attn_rows(pool, k == 0 ? GGML_FA_ROWS_ROW_BY_ROW : GGML_FA_ROWS_TILED);
      const auto t0 = std::chrono::steady_clock::now();
      if (!Decode(ctx, at, rows, vocab)) return 1;
      ms[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!llama_memory_seq_rm(llama_get_memory(ctx), 0, at, -1)) at += rows;
    }
    const double a = Median(ms[0]);
    const double b = Median(ms[1]);
    std::printf("%4d  %13.1f  %8.1f  %16.2f\n", rows, a, b, b / a);
    std::fflush(stdout);
  }
  ggml_threadpool_set_flash_attn_rows(pool, GGML_FA_ROWS_STOCK);
  llama_free(ctx);
  ggml_threadpool_free(pool);
  llama_model_free(model);
  return 0;
}
