// One llama_decode of llmd's decode items: the batch, the flash attention kernel its rows take
// (FlashAttnRows, llama.cpp patch 0004), and a call that may be stopped.
//
// A call is stopped through llama.cpp's abort callback, which ggml asks between the graph's
// operations on the thread that called llama_decode. llama.cpp then drops the positions of the
// micro-batch it was computing; those of the call's earlier micro-batches stay, so they are
// dropped here too: a stopped call keeps nothing. Only attention cells can be dropped that way
// (recurrent state is changed in place): the caller passes `stop` only where that holds.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_DECODE_CALL_H_
#define LLMD_ENGINE_LLAMA_LLAMA_DECODE_CALL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/engine.h"
#include "ggml-cpu.h"
#include "llama.h"

namespace llmd::engine {

// Lets DecodeCall's `stop` reach `ctx`'s compute; once for each context.
void AllowStoppedCalls(llama_context* ctx);

// Decodes `items` in one llama_decode, its rows on the kernel FlashAttnRows chooses for the
// model's `memory`. ResourceExhausted when the cache has no room (nothing changed); Cancelled
// when `stop` (may be null) said stop (nothing kept; llama.cpp's log lines of the stopped call
// are dropped); Internal for any other failure.
Status DecodeCall(llama_context* ctx, ggml_threadpool* threadpool, const std::vector<DecodeItem>& items,
                  const MemoryCapabilities& memory, const std::function<bool()>* stop);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_DECODE_CALL_H_
