// Where a prompt's prefill is cut into decode calls, on a model whose arithmetic depends on
// the cuts. A recurrent state (Gated DeltaNet) is computed by a chunked kernel for a run of
// tokens and a one-token kernel for one; the two agree in exact arithmetic but not in floating
// point, so the state after a prompt depends on how its tokens were grouped, and with it the
// greedy text. Prefix reuse restores a state saved at a cut and prefills on from there: the
// answer equals the cold one only if the cold prefill cut the prompt at the same places.
//
// So the cuts are a function of the prompt alone, and every cut but the last is a function of
// the tokens before it alone: two prompts that share a prefix cut it at the same places, and
// a state saved at a cut of one is a state the cold prefill of the other passes through
// wherever that position is a cut of the other too (IsCut). The cuts:
//  - at a message start at least kMinMessageSpan after the previous message cut (a shared
//    system prompt, the history of a conversation);
//  - max_chunk after the previous cut of either kind (a long message, within one piece);
//  - before the last prompt token (a resend of the same prompt restores the state there),
//    unless a message cut (the generation prompt's, usually) is at most kNearEnd tokens before
//    it: a resend restores that state and computes those few tokens in one call, as the cold
//    prefill did, and every prefill is spared a call (a pass over the weights) of one token.
#ifndef LLMD_SCHED_PREFILL_CUTS_H_
#define LLMD_SCHED_PREFILL_CUTS_H_

#include <cstddef>
#include <vector>

#include "engine/types.h"

namespace llmd::sched {

// Short messages are not cut apart: each cut is one more decode call, which re-reads the
// weights. A conversation of many short messages is cut every 32 tokens at most.
inline constexpr size_t kMinMessageSpan = 32;
// A message cut this near the last prompt token stands in for the cut before it.
inline constexpr size_t kNearEnd = 16;

// The prompt lengths after which its prefill is cut, ascending, each in [1, prompt.size()).
// `message_start` < 0: the model has no message start token. `max_chunk` >= 1.
std::vector<size_t> PrefillCuts(const std::vector<engine::TokenId>& prompt, engine::TokenId message_start,
                                size_t max_chunk);

// Whether `cuts` (PrefillCuts, ascending) holds `length`.
bool IsCut(const std::vector<size_t>& cuts, size_t length);

// The cuts that are message starts, not chunk or last-token cuts.
std::vector<size_t> MessageCuts(const std::vector<engine::TokenId>& prompt, const std::vector<size_t>& cuts,
                                engine::TokenId message_start);

}  // namespace llmd::sched

#endif  // LLMD_SCHED_PREFILL_CUTS_H_
