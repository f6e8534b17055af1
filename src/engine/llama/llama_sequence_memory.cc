#include "engine/llama/llama_sequence_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "engine/prompt_kernels.h"

namespace llmd::engine {

std::string StateBuffer(size_t size) {
  std::string bytes;
  bytes.reserve(size);  // allocated, not yet touched: the advice comes before the first fault
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + size) & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // advice only
  bytes.resize(size);
  return bytes;
}

std::optional<std::string> ReadSequenceState(llama_context* ctx, int32_t sequence, llama_state_seq_flags flags,
                                             size_t head) {
  const size_t size = llama_state_seq_get_size_ext(ctx, sequence, flags);
  std::string state = StateBuffer(head + size);
  const size_t written =
      llama_state_seq_get_data_ext(ctx, reinterpret_cast<uint8_t*>(state.data() + head), size, sequence, flags);
  if (written == 0 || written > size) return std::nullopt;
  state.resize(head + written);
  return state;
}

bool CopySequenceState(llama_context* ctx, int32_t src, int32_t dst) {
  const std::optional<std::string> state = ReadSequenceState(ctx, src, 0);
  size_t put = 0;
  if (state.has_value()) {
    try {
      put = llama_state_seq_set_data_ext(ctx, reinterpret_cast<const uint8_t*>(state->data()), state->size(), dst, 0);
    } catch (const std::exception&) {
      put = 0;  // as a cache with no room
    }
  }
  if (put == 0) llama_memory_seq_rm(llama_get_memory(ctx), dst, -1, -1);
  return put > 0;
}

int64_t HeldCells(llama_context* ctx, int32_t sequences) {
  llama_memory_t mem = llama_get_memory(ctx);
  int64_t held = 0;
  for (int32_t s = 0; s < sequences; ++s) held += llama_memory_seq_pos_max(mem, s) + 1;
  return held;
}

// What the KV cache takes when full: K and V for every layer and cell, at the cache type's
// size. The head size comes from the model (Qwen3's is not n_embd / n_head).
uint64_t KvCacheBytes(const llama_model* model, const std::string& arch, ggml_type type, uint64_t cells) {
  int64_t head = llama_model_n_embd(model) / std::max(1, llama_model_n_head(model));
  char buf[32];
  if (llama_model_meta_val_str(model, (arch + ".attention.key_length").c_str(), buf, sizeof buf) > 0) {
    head = std::atoll(buf);
  }
  const uint64_t values = 2ull * llama_model_n_layer(model) * llama_model_n_head_kv(model) * head;
  return values * ggml_type_size(type) / ggml_blck_size(type) * cells;
}

Status CheckPoolRoom(llama_context* ctx, int32_t sequences, int64_t pool, const std::vector<DecodeItem>& items) {
  llama_memory_t mem = llama_get_memory(ctx);
  std::vector<int64_t> end(static_cast<size_t>(sequences), -1);
  const int64_t held = HeldCells(ctx, sequences);
  int64_t more = 0;
  for (const DecodeItem& d : items) {
    if (d.sequence < 0 || d.sequence >= sequences) continue;  // llama.cpp refuses it
    int64_t& e = end[static_cast<size_t>(d.sequence)];
    if (e < 0) e = llama_memory_seq_pos_max(mem, d.sequence) + 1;
    if (d.position + 1 > e) {
      more += d.position + 1 - e;
      e = d.position + 1;
    }
  }
  if (held + more <= pool) return Status::Ok();
  return ResourceExhaustedError("no room in the KV pool: " + std::to_string(held) + " of " + std::to_string(pool) +
                                " tokens held, " + std::to_string(more) + " more asked");
}

namespace {

// A hybrid's prompt call (see FlashAttnRows).
ggml_fa_rows HybridPromptCallRows(const std::vector<DecodeItem>& items) {
  if (items.size() < static_cast<size_t>(kTiledFromRows)) return GGML_FA_ROWS_STOCK;
  for (const DecodeItem& d : items) {
    if (d.prompt_tokens <= 0 || d.sequence != items.front().sequence) return GGML_FA_ROWS_STOCK;
  }
  return items.front().position >= kTiledKernelRows ? GGML_FA_ROWS_TILED : GGML_FA_ROWS_STOCK;
}

}  // namespace

ggml_fa_rows FlashAttnRows(const std::vector<DecodeItem>& items, const MemoryCapabilities& memory) {
  const int32_t prompt_call_tokens = memory.prompt_call_tokens;
  if (prompt_call_tokens <= 0) return memory.decode_shape_tokens > 0 ? HybridPromptCallRows(items) : GGML_FA_ROWS_STOCK;
  std::optional<PromptKernel> kind;
  for (const DecodeItem& d : items) {
    if (d.prompt_tokens <= 0) return GGML_FA_ROWS_STOCK;
    const PromptKernel k = ColdKernel(d.position, d.prompt_tokens, prompt_call_tokens);
    if (kind.has_value() && *kind != k) return GGML_FA_ROWS_STOCK;
    kind = k;
  }
  if (kind == PromptKernel::kTiled) return GGML_FA_ROWS_TILED;
  if (kind == PromptKernel::kRowByRow) return GGML_FA_ROWS_ROW_BY_ROW;
  return GGML_FA_ROWS_STOCK;  // one row: ggml's choice, as cold
}

}  // namespace llmd::engine
