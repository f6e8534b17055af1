// Splits one decode step into calls in which every sequence's tokens are computed in one
// piece, the same piece they would be alone: llama.cpp cuts a call holding sequences with
// different token counts into pieces with equal counts per sequence (split_equal), so a
// prompt chunk decoded beside one-token steps would be computed as 1 + the rest, and a
// recurrent state's arithmetic depends on those pieces (MemoryCapabilities::
// decode_shape_tokens). Sequences with the same count share a call, as many as one piece of
// `piece_tokens` holds.
#ifndef LLMD_SCHED_DECODE_CALLS_H_
#define LLMD_SCHED_DECODE_CALLS_H_

#include <cstddef>
#include <vector>

#include "engine/engine.h"

namespace llmd::sched {

// The calls, each item in its sequence's order; sequences in the order they first appear.
std::vector<std::vector<engine::DecodeItem>> ShapeStableCalls(const std::vector<engine::DecodeItem>& items,
                                                             size_t piece_tokens);

// A step's generated tokens (each sequence's next token and its draft) in one call, then each
// sequence's prompt chunk in a call of its own: a prompt call is computed as the prompt's cold
// prefill computes those tokens (Engine::DecodeBatch), which a mixed call is not. No call is
// empty.
std::vector<std::vector<engine::DecodeItem>> GenerationThenPromptCalls(const std::vector<engine::DecodeItem>& items);

// Orders a call's items by sequence id, each sequence's own items keeping their order. Where
// each sequence has a KV stream of its own, llama.cpp puts only sequences with consecutive,
// increasing ids in one micro-batch (llama_batch_allocr::split_equal, sequential): a call of
// one token for each of sequences 2, 0, 3, 1 runs as four micro-batches, each reading all the
// weights for one token (a matrix-vector product instead of one matrix product); sorted, it
// runs as one.
void OrderBySequence(std::vector<engine::DecodeItem>* items);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_DECODE_CALLS_H_
