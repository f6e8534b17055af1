// LlamaDrafter: where LlamaEngine's draft tokens come from (EngineConfig::speculative): n-gram
// lookup in the sequence's own tokens or a draft model with the target's vocabulary, over
// llama.cpp's common_speculative, or the target's own MTP layer (LlamaMtp). The scheduler
// verifies the drafts; this class only guesses.
//
// A draft model keeps its own memory per sequence and knows which tokens it holds; before
// drafting it catches up with what the target holds (one batched decode for all sequences),
// so prefix reuse, checkpoints and rollbacks on the target need nothing from it, and a
// sequence that stopped drafting costs the draft model nothing until it drafts again. The MTP
// layer cannot catch up later (it needs the target's hidden states of each decode), so it
// follows every target decode and sequence operation (the *Target* calls below; no-ops for
// the other modes).
//
// Thread-safety: as Engine (one thread at a time).
#ifndef LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_
#define LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/llama/llama_mtp.h"
#include "llama-cpp.h"
#include "llama.h"

struct common_speculative;
struct ggml_threadpool;

namespace llmd::engine {

class LlamaDrafter {
 public:
  // For `target` (loaded with `config`, with load_mtp for kMtp): loads the draft model
  // (kDraft) and checks its vocabulary, or checks the target's MTP layer (kMtp).
  // InvalidArgument for a draft model that cannot draft for this target (another vocabulary,
  // recurrent memory) or a target without a usable MTP layer.
  static Result<std::unique_ptr<LlamaDrafter>> Create(const EngineConfig& config, llama_model* target);
  ~LlamaDrafter();
  LlamaDrafter(const LlamaDrafter&) = delete;
  LlamaDrafter& operator=(const LlamaDrafter&) = delete;

  const SpeculativeInfo& info() const { return info_; }

  void Begin(int32_t sequence, std::span<const TokenId> prompt);
  // See Engine::Draft. `threadpool`: the target's compute threads, shared.
  Status Draft(std::vector<DraftRequest>* requests, ggml_threadpool* threadpool);
  void Accept(int32_t sequence, int32_t accepted);

  // kMtp: the target's (new) context, which the MTP layer's context reads; called whenever
  // the target makes one. `threadpool`: the target's compute threads, shared.
  Status AttachTarget(llama_context* target_ctx, ggml_threadpool* threadpool);
  // kMtp: after each successful target decode of `items`; and the target's sequence
  // operations. SaveTargetState's bytes (target_state_bytes() of them) go with the target's
  // own recurrent state into a checkpoint, and back through RestoreTargetState.
  Status AfterTargetDecode(const std::vector<DecodeItem>& items);
  void TruncateTarget(int32_t sequence, int32_t position);
  void CopyTarget(int32_t src, int32_t dst);
  size_t target_state_bytes() const;
  std::string SaveTargetState(int32_t sequence) const;
  Status RestoreTargetState(int32_t sequence, std::string_view state);

  // Frees the draft model's context (its memory of every sequence); made again on the next
  // Draft. kMtp: frees the MTP layer's context, before the target frees its own.
  void ReleaseWorkingMemory();
  // The draft model's weights and context, all devices.
  uint64_t weight_bytes() const;
  uint64_t context_bytes() const;

 private:
  LlamaDrafter() = default;
  Status MakeSpeculative();
  Status MakeDraftContext();
  // Decodes on the draft context what each drafting sequence's history has that the context
  // does not hold yet (after dropping what no longer matches).
  Status CatchUp(const std::vector<DraftRequest>& requests);

  EngineConfig config_;
  SpeculativeInfo info_;
  llama_model_ptr draft_model_;  // kDraft
  llama_context_ptr draft_ctx_;  // kDraft; null after ReleaseWorkingMemory
  uint64_t context_bytes_ = 0;
  std::vector<std::vector<TokenId>> draft_held_;  // kDraft, per sequence: what draft_ctx_ holds
  std::vector<std::vector<TokenId>> histories_;   // per sequence: the history as llama.cpp wants it
  std::vector<std::vector<TokenId>> results_;     // per sequence: the last draft
  common_speculative* spec_ = nullptr;            // remade with the draft context
  std::unique_ptr<LlamaMtp> mtp_;                 // kMtp, while the target has a context
  llama_model* target_ = nullptr;                 // kMtp: the MTP layer's weights are the target's
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_
