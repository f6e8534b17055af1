#include "engine/llama/llama_decode_call.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "engine/llama/llama_devices.h"
#include "engine/llama/llama_sequence_memory.h"

namespace llmd::engine {
namespace {

// The running call's stop, on the thread that called llama_decode (ggml's thread 0, the one
// that asks the abort callback).
thread_local const std::function<bool()>* t_stop = nullptr;

bool StopRequested(void* /*data*/) { return t_stop != nullptr && (*t_stop)(); }

// Drops what a stopped call kept: each of its sequences from its first position in the call.
void DropCall(llama_context* ctx, const std::vector<DecodeItem>& items) {
  std::map<int32_t, int32_t> first;
  for (const auto& d : items) {
    auto [it, added] = first.emplace(d.sequence, d.position);
    if (!added) it->second = std::min(it->second, d.position);
  }
  for (const auto& [sequence, position] : first) llama_memory_seq_rm(llama_get_memory(ctx), sequence, position, -1);
}

}  // namespace

void AllowStoppedCalls(llama_context* ctx) { llama_set_abort_callback(ctx, &StopRequested, nullptr); }

Status DecodeCall(llama_context* ctx, ggml_threadpool* threadpool, const std::vector<DecodeItem>& items,
                  const MemoryCapabilities& memory, const std::function<bool()>* stop) {
  llama_batch batch = llama_batch_init(static_cast<int32_t>(items.size()), 0, 1);
  for (size_t i = 0; i < items.size(); ++i) {
    batch.token[i] = items[i].token;
    batch.pos[i] = items[i].position;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = items[i].sequence;
    batch.logits[i] = items[i].logits;
  }
  batch.n_tokens = static_cast<int32_t>(items.size());
  ggml_threadpool_set_flash_attn_rows(threadpool, FlashAttnRows(items, memory));
  std::optional<HeldLlamaLogs> held_logs;
  if (stop != nullptr) held_logs.emplace();
  t_stop = stop;
  const int32_t rc = llama_decode(ctx, batch);
  t_stop = nullptr;
  ggml_threadpool_set_flash_attn_rows(threadpool, GGML_FA_ROWS_STOCK);
  llama_batch_free(batch);
  if (rc == 2 && held_logs) {  // stopped (llama.h: aborted)
    held_logs->Drop();
    DropCall(ctx, items);
    return CancelledError("the decode call was stopped for a request of a higher class");
  }
  // 1: no room in the KV cache for the batch (llama.h); it changed nothing.
  if (rc == 1) return ResourceExhaustedError("no room in the KV cache for a batch of " + std::to_string(items.size()) + " tokens");
  if (rc != 0) return InternalError("llama_decode failed with code " + std::to_string(rc));
  return Status::Ok();
}

}  // namespace llmd::engine
