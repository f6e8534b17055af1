// LlamaDrafter: where LlamaEngine's draft tokens come from (EngineConfig::speculative), over
// llama.cpp's common_speculative: n-gram lookup in the sequence's own tokens, or a draft
// model with the target's vocabulary. The scheduler verifies the drafts; this class only
// guesses.
//
// A draft model keeps its own memory per sequence and knows which tokens it holds; before
// drafting it catches up with what the target holds (one batched decode for all sequences),
// so prefix reuse, checkpoints and rollbacks on the target need nothing from it, and a
// sequence that stopped drafting costs the draft model nothing until it drafts again.
//
// Thread-safety: as Engine (one thread at a time).
#ifndef LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_
#define LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "llama-cpp.h"
#include "llama.h"

struct common_speculative;
struct ggml_threadpool;

namespace llmd::engine {

class LlamaDrafter {
 public:
  // For `target` (loaded with `config`): loads the draft model (kDraft), checks its
  // vocabulary and makes its context. InvalidArgument for a draft model that cannot draft
  // for this target (another vocabulary, recurrent memory), Unimplemented for kMtp.
  static Result<std::unique_ptr<LlamaDrafter>> Create(const EngineConfig& config, const llama_model* target);
  ~LlamaDrafter();
  LlamaDrafter(const LlamaDrafter&) = delete;
  LlamaDrafter& operator=(const LlamaDrafter&) = delete;

  const SpeculativeInfo& info() const { return info_; }

  void Begin(int32_t sequence, std::span<const TokenId> prompt);
  // See Engine::Draft. `threadpool`: the target's compute threads, shared.
  Status Draft(std::vector<DraftRequest>* requests, ggml_threadpool* threadpool);
  void Accept(int32_t sequence, int32_t accepted);

  // Frees the draft model's context (its memory of every sequence); made again on the next
  // Draft.
  void ReleaseWorkingMemory();
  // The draft model's weights and context, all devices.
  uint64_t weight_bytes() const;
  uint64_t context_bytes() const { return context_bytes_; }

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
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_DRAFTER_H_
