// What the llama.cpp engine does with its sequences' memory beyond llama.cpp's own calls: a
// sequence copied through the per-sequence state (llama.cpp's seq_cp copies a whole stream
// where each sequence has one, committing every page of it), the cells a pool of streams
// holds and the room left in it, and the flash attention kernel a call's rows take
// (engine/prompt_kernels.h, llama.cpp patch 0004).
#ifndef LLMD_ENGINE_LLAMA_LLAMA_SEQUENCE_MEMORY_H_
#define LLMD_ENGINE_LLAMA_LLAMA_SEQUENCE_MEMORY_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "engine/context_size.h"
#include "engine/engine.h"
#include "ggml-cpu.h"
#include "llama.h"

namespace llmd::engine {

// A zeroed buffer of `size` bytes for a sequence's saved state. A hybrid model's recurrent
// state is ~20 MB a sequence, saved at each checkpoint: touched in 4 KiB pages that took
// ~50 ms on a 2-core VM, a page fault each (perf: SaveSequenceState's faults and zeroing were
// all of a 132-token prefill's time outside its decode calls). So the buffer asks for
// transparent huge pages (MADV_HUGEPAGE), a fault per 2 MiB; where the kernel does not offer
// them the advice changes nothing.
std::string StateBuffer(size_t size);

// `sequence`'s state as llama.cpp's per-sequence state API writes it (`flags`: 0, everything;
// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY, the recurrent part), after `head` bytes left for the
// caller, in a StateBuffer; nullopt where llama.cpp wrote nothing.
std::optional<std::string> ReadSequenceState(llama_context* ctx, int32_t sequence, llama_state_seq_flags flags,
                                             size_t head = 0);

// Puts `src`'s cells (and recurrent state) into `dst`, which must be empty; false, with dst
// left empty, where the cache had no room.
bool CopySequenceState(llama_context* ctx, int32_t src, int32_t dst);

// The cells sequences 0 .. sequences-1 hold: a sequence's positions run from 0 (llmd cuts
// only ends).
int64_t HeldCells(llama_context* ctx, int32_t sequences);

// What the KV cache takes when full: K and V for every layer and cell, at the cache type's
// size (the formula, where llama.cpp does not say what it allocated).
uint64_t KvCacheBytes(const llama_model* model, const std::string& arch, ggml_type type, uint64_t cells);

// ResourceExhausted, with the numbers, where `items` would hold more than `pool` cells
// together; nothing is decoded either way.
Status CheckPoolRoom(llama_context* ctx, int32_t sequences, int64_t pool, const std::vector<DecodeItem>& items);

// The kernel a call's rows take (the model's MemoryCapabilities `memory`):
// - prompt_call_tokens > 0 (dense): a prompt call's tokens (all of one kind) the kernel their
//   cold prefill computes them with, in micro-batches of prompt_call_tokens;
// - decode_shape_tokens > 0 (hybrid): the worker gives a prompt the same calls cold and after
//   a cached prefix, at the same positions (sched/prefill_cuts.h), so a call of one
//   sequence's prompt tokens takes a kernel chosen by its rows and its first position alone
//   (never by the prompt's length: a checkpoint of a shorter prompt serves a longer one):
//   tiled for kTiledFromRows rows or more after the first tile of cells (kTiledKernelRows);
// anything else, and a one-row micro-batch, ggml's own choice.
ggml_fa_rows FlashAttnRows(const std::vector<DecodeItem>& items, const MemoryCapabilities& memory);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_SEQUENCE_MEMORY_H_
