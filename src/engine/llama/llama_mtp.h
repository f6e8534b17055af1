// LlamaMtp: drafts from the target model's own multi-token-prediction block (Qwen3.5's
// nextn layer; EngineConfig::speculative.mode == kMtp), as llama.cpp's draft-mtp does.
//
// The MTP block has its own small KV cache (one layer) in a second context over the target's
// weights. Each of its cache entries pairs a token with the target's hidden state of the token
// before it, so every token the target decodes must be decoded here too. AfterDecode keeps the
// pairs in a per-sequence backlog, and the next draft decodes the backlogs of the sequences it
// drafts for, together, before their guesses: a sequence that is not drafting (its job paused
// drafting, or turned it off) costs no MTP decode per step, only a batched catch-up when it
// drafts again or when its backlog reaches kMaxBacklog tokens. A draft runs the block alone:
// the last sampled token with the last hidden state gives a guess and a new hidden state,
// which gives the next guess, and so on.
//
// Unlike llama.cpp's implementation, the per-sequence hidden state lives here, so that it
// follows the target's sequence operations: truncation (a rejected draft, prefix reuse), a
// copy to another sequence, and a recurrent-state checkpoint restored into any sequence
// (SaveState/RestoreState travel with the target's state).
//
// Thread-safety: as Engine (one thread at a time). Lifetime: made for one target context and
// destroyed before it.
#ifndef LLMD_ENGINE_LLAMA_LLAMA_MTP_H_
#define LLMD_ENGINE_LLAMA_LLAMA_MTP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "llama-cpp.h"
#include "llama.h"

struct common_sampler;
struct ggml_threadpool;

namespace llmd::engine {

class LlamaMtp {
 public:
  // InvalidArgument when `target` has no MTP block llmd can draft with (none, several chained
  // heads, or one that shares the target's memory). Does not touch any context.
  static Status CheckModel(const llama_model* target, const std::string& model_path);

  // The MTP context for `target_ctx` (which then keeps every token's hidden state), drafting
  // at most `config.speculative.draft_max` tokens a sequence; `threadpool` is shared.
  static Result<std::unique_ptr<LlamaMtp>> Create(const EngineConfig& config, llama_model* target,
                                                  llama_context* target_ctx, ggml_threadpool* threadpool);
  ~LlamaMtp();
  LlamaMtp(const LlamaMtp&) = delete;
  LlamaMtp& operator=(const LlamaMtp&) = delete;

  // After the target decoded `items` (each sequence's items consecutive, in position order):
  // the MTP cache takes the same tokens. On error the sequences of the batch stop drafting
  // until they start over (Truncate to 0); the target is unaffected either way.
  Status AfterDecode(const std::vector<DecodeItem>& items);
  // See Engine::Draft. A sequence whose hidden state is unknown gets no draft.
  Status Draft(std::vector<DraftRequest>* requests);
  // The target kept the first `accepted` draft tokens of the sequence's last verified block.
  void Accept(int32_t sequence, int32_t accepted);

  // The target's sequence operations, mirrored.
  void Truncate(int32_t sequence, int32_t position);
  void Copy(int32_t src, int32_t dst);
  // The hidden state a checkpoint of `sequence` needs besides the target's state: a fixed
  // state_bytes() bytes.
  std::string SaveState(int32_t sequence) const;
  Status RestoreState(int32_t sequence, std::string_view state);
  size_t state_bytes() const;

  uint64_t context_bytes() const { return context_bytes_; }

 private:
  // A token the MTP cache has yet to take.
  struct Pending {
    TokenId token;
    int32_t position;
  };
  // What is known of one sequence.
  struct Sequence {
    int32_t cached = 0;                 // positions 0 .. cached-1 are in the MTP cache
    std::vector<Pending> backlog;       // then these, in position order, each with...
    std::vector<float> backlog_hidden;  // ...the target's hidden state before it (n_embd; zeros: unknown)
    bool in_sync = true;                // false after a failed decode: nothing more until cleared
    int32_t hidden_position = -1;   // `hidden` is the target's state after this position; -1: unknown
    std::vector<float> hidden;      // n_embd
    int32_t block_start = -1;       // the first position of `block`
    std::vector<float> block;       // the target's hidden states after the last decode's last
                                    // positions (at most draft_max + 1), one row each
  };

  // Tokens a sequence may hold back before they are decoded anyway.
  static constexpr size_t kMaxBacklog = 256;

  LlamaMtp() = default;
  // The position after the last token the MTP cache holds or will hold.
  static int32_t KnownEnd(const Sequence& q) { return q.backlog.empty() ? q.cached : q.backlog.back().position + 1; }
  // Adds the sequence's backlog entries [from, end) to the batch, without logits.
  void AddBacklog(int32_t sequence, size_t from, size_t end);
  // The backlog has gone into the MTP cache.
  void BacklogDecoded(int32_t sequence);
  // Decodes the sequence's backlog now, in pieces of the batch's size; the batch must be empty.
  Status FlushBacklog(int32_t sequence);
  // Decodes the backlogs of `sequences`, together where they fit.
  Status FlushBacklogs(const std::vector<int32_t>& sequences);
  Status Decode(int32_t n_tokens);
  void ClearBatch() { batch_.n_tokens = 0; }
  void AddToBatch(TokenId token, int32_t position, int32_t sequence, const float* hidden, bool logits);
  void Forget(int32_t sequence);

  llama_context* target_ctx_ = nullptr;
  llama_context_ptr ctx_;
  int32_t n_embd_ = 0;
  int32_t draft_max_ = 0;
  float p_min_ = 0;
  uint64_t context_bytes_ = 0;
  std::vector<Sequence> sequences_;
  std::vector<common_sampler*> samplers_;  // per sequence: top-10 over the block's logits
  // The batch's storage: an MTP batch carries a token and a hidden state per position.
  std::vector<llama_token> tokens_;
  std::vector<float> embd_;
  std::vector<llama_pos> pos_;
  std::vector<int32_t> n_seq_id_;
  std::vector<llama_seq_id> seq_id_storage_;
  std::vector<llama_seq_id*> seq_id_;
  std::vector<int8_t> logits_;
  llama_batch batch_{};
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_LLAMA_LLAMA_MTP_H_
