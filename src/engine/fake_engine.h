// FakeEngine: a deterministic, instant Engine for scheduler tests. No model, no llama.cpp.
//
// Tokens: one per byte (token = byte + 16); 1 opens a message, 2 ends generation; 0 and
// 3..15 are unused control tokens. Prompts:
//   ChatPrompt(s, u)     = [1] "system\n" s [1] "user\n" u [1] "assistant\n"
//   NextTurnPrompt(s, u) = [1] "user\n" u [1] "assistant\n"
//   ConversationPrompt   = [1] role "\n" content, per message, then [1] "assistant\n"
//   CompletionPrompt(p)  = the bytes of p
//
// Memory: each sequence is the exact token history it holds. DecodeBatch checks positions as
// llama.cpp does and, on any error, changes nothing. Recurrent memory can be cut only at 0 or
// at its end (llama.cpp's seq_rm rule for recurrent state), and has state checkpoints.
//
// Sampling: the next token is a pure function of the sequence's whole history (a lowercase
// letter), so a request produces the same tokens alone or batched with others, whatever its
// slot. It never ends generation unless end_after_generated says so. Recurrent memory is
// also, like llama.cpp's recurrent kernels, sensitive to how its tokens were grouped: a token
// decoded in a piece of n > 1 tokens of its sequence changes the history's hash, and a call
// holding sequences with different token counts is cut into pieces as llama.cpp's
// split_equal cuts it (equal counts per sequence, at most ubatch_tokens in all), so the next
// token depends on the decode calls that built the state (shape_sensitive: false turns it off).
//
// Thread-safety: the Engine interface is used from one thread (the scheduler's); the test
// accessors (batches(), history(), HoldDecodes(), ...) may be called from any thread.
#ifndef LLMD_ENGINE_FAKE_ENGINE_H_
#define LLMD_ENGINE_FAKE_ENGINE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "engine/engine.h"

namespace llmd::engine {

enum class FakeMemory {
  kAttention,  // cut anywhere; no state checkpoints
  kRecurrent,  // cut only at 0 or the end; state checkpoints (MemoryCapabilities below)
};

struct FakeEngineOptions {
  int32_t sequences = 4;
  int32_t context_tokens = 4096;  // per sequence
  FakeMemory memory = FakeMemory::kAttention;
  int32_t decode_cost_ms = 0;     // sleep in every DecodeBatch
  // Simulated time: every DecodeBatch moves `clock` (when set) by step_ms + item_ms a token.
  ManualClock* clock = nullptr;
  int32_t step_ms = 0, item_ms = 0;
  // Failure injection: a DecodeBatch holding this token fails (-1: none), and the next
  // `fail_next_decodes` DecodeBatch calls fail. A failed call changes nothing.
  TokenId poison_token = -1;
  int32_t fail_next_decodes = 0;
  // > 0: every sampler returns the end-of-generation token after this many tokens.
  int32_t end_after_generated = 0;
  // false: CopySequence is Unimplemented (and MemoryCapabilities says so).
  bool sequence_copy = true;
  // true: CopySequence finds no room (ResourceExhausted, the destination left empty), as a
  // full KV pool refuses one, while MemoryCapabilities still says copies work.
  bool copies_find_no_room = false;
  // Speculative decoding: > 0 drafts up to this many tokens (the true continuation, so a
  // draft is accepted whole), of which only the first `draft_correct` are right when it is
  // >= 0 (the rest are another letter).
  int32_t draft_max = 0;
  int32_t draft_correct = -1;
  std::vector<double> synthetic_acceptance;  // SpeculativeInfo::synthetic_acceptance (benchmarks)
  // Recurrent memory: the last this many tokens of a decode can be taken back, once
  // (llama.cpp's n_rs_seq rollback).
  int32_t rollback_tokens = 0;
  // Recurrent memory: the pieces of a decode call change the result (above), and the largest
  // piece (MemoryCapabilities::decode_shape_tokens).
  bool shape_sensitive = true;
  int32_t ubatch_tokens = 512;
  // > 0: the tokens all sequences may hold together (a shared pool, as a unified KV cache or
  // a device's memory): a DecodeBatch that would hold more is ResourceExhausted.
  int32_t pool_tokens = 0;
  // MemoryCapabilities::prompt_call_tokens, prompt_calls_apart and stream_per_sequence.
  int32_t prompt_call_tokens = 0;
  bool prompt_calls_apart = false;
  bool stream_per_sequence = false;
};

class FakeEngine final : public Engine {
 public:
  static constexpr TokenId kMessageStart = 1;
  static constexpr TokenId kEndOfGeneration = 2;
  static constexpr TokenId kByteOffset = 16;
  static TokenId ByteToken(unsigned char byte) { return static_cast<TokenId>(byte) + kByteOffset; }
  // The tokens of `text`, one per byte.
  static std::vector<TokenId> Bytes(std::string_view text);

  explicit FakeEngine(FakeEngineOptions options = {});
  ~FakeEngine() override;

  // --- Engine.
  Status Load(const EngineConfig& config) override;
  bool loaded() const override;
  const ModelInfo& model_info() const override { return info_; }
  Result<std::vector<TokenId>> Tokenize(std::string_view text, bool add_bos, bool parse_special) const override;
  Result<std::string> Detokenize(const std::vector<TokenId>& tokens, bool render_special) const override;
  Result<std::vector<TokenId>> ChatPrompt(std::string_view system, std::string_view user,
                                          bool sanitize) const override;
  Result<std::vector<TokenId>> NextTurnPrompt(std::string_view system, std::string_view user,
                                              bool sanitize) const override;
  Result<ChatPlan> ConversationPrompt(const std::vector<chat::Message>& messages, const ChatFormat& format,
                                      bool sanitize) const override;
  Result<std::vector<TokenId>> CompletionPrompt(std::string_view prompt) const override;
  TokenId MessageStartToken() const override { return kMessageStart; }
  Status Draft(std::vector<DraftRequest>* requests) override;
  void AcceptDraft(int32_t sequence, int32_t accepted) override;
  Status DecodeBatch(const std::vector<DecodeItem>& items) override { return Decode(items, nullptr); }
  // Attention memory: asks `stop` once, after a held call is let through (as if the call were
  // stopped between two of its operations), and when it says stop changes nothing and is
  // Cancelled. Recurrent memory decodes the call whole, as the llama.cpp engine does.
  Status DecodeBatchUnlessStopped(const std::vector<DecodeItem>& items, const std::function<bool()>& stop) override {
    return Decode(items, options_.memory == FakeMemory::kAttention ? &stop : nullptr);
  }
  Result<std::vector<float>> Embed(const std::vector<TokenId>&) override {
    return UnimplementedError("the fake engine has no embeddings");
  }
  // The fake's tokens follow from the history alone: sampling parameters are validated only.
  Result<std::unique_ptr<Sampler>> NewSampler(const SamplingParams& params,
                                              std::span<const TokenId> context) override;
  // The history (and pieces) the output followed: its sample is the token they give.
  std::shared_ptr<const KeptOutput> KeepOutput(int32_t output_index) override;
  bool IsEndOfGeneration(TokenId token) const override { return token == kEndOfGeneration; }
  std::string TokenText(TokenId token) const override;
  Status TruncateSequence(int32_t sequence, int32_t position) override;
  Status CopySequence(int32_t src, int32_t dst) override;
  Result<std::string> SaveSequenceState(int32_t sequence) override;
  Status RestoreSequenceState(int32_t sequence, const std::string& state) override;
  Result<std::string> ParkSequence(int32_t sequence) override;
  Status UnparkSequence(int32_t sequence, const std::string& parked) override;
  // Empties every sequence; the next DecodeBatch "makes the memory again".
  void ReleaseWorkingMemory() override;
  // KV: one byte a cell (context_tokens reserved a sequence, the tokens held resident).
  MemoryUse memory_use() const override;
  void Release() override;

  // --- For tests (any thread).

  // The token `history` is followed by (what every sampler returns after it).
  static TokenId NextToken(const std::vector<TokenId>& history);
  // Recurrent memory with shape_sensitive: also the size of the piece each token was decoded
  // in (1: alone).
  static TokenId NextToken(const std::vector<TokenId>& history, const std::vector<int32_t>& pieces);

  // Every DecodeBatch that succeeded, in order (with no failures, batch i is the worker's
  // step i + 1), and every one that failed.
  std::vector<std::vector<DecodeItem>> batches() const;
  std::vector<std::vector<DecodeItem>> failed_batches() const;
  // The calls DecodeBatchUnlessStopped stopped, in order.
  std::vector<std::vector<DecodeItem>> stopped_batches() const;
  // Tokens decoded in successful batches: in all, and those that were not the token the
  // sampler had just produced for that sequence and position (prompt tokens).
  int64_t decoded_tokens() const;
  int64_t prompt_tokens_decoded() const;
  // What `sequence` holds now.
  std::vector<TokenId> history(int32_t sequence) const;
  // Draft tokens decoded (the scheduler's verification) and accepted (AcceptDraft).
  int64_t draft_tokens_decoded() const;
  int64_t accepted_drafts_reported() const;
  // Memory operations refused as Unimplemented (the scheduler asked for something the
  // MemoryCapabilities rule out).
  int64_t refused_operations() const;
  // ReleaseWorkingMemory calls that dropped working memory (not those that found none).
  int64_t working_memory_releases() const;

  void FailNextDecodes(int32_t n);
  // From now on a DecodeBatch call blocks, before it does anything, until it is released (or
  // 10 s pass). ReleaseDecodes lets it through and stops holding; ReleaseOneDecode lets it
  // through and holds the calls after it, so ReleaseOneDecode + WaitUntilHeld runs exactly one
  // more decode.
  void HoldDecodes();
  void ReleaseDecodes();
  void ReleaseOneDecode();
  // Waits until a DecodeBatch call is blocked since the last HoldDecodes; false after
  // `timeout_ms`.
  bool WaitUntilHeld(int timeout_ms) const;

 private:
  class FakeSampler;
  struct FakeKeptOutput;
  Status Decode(const std::vector<DecodeItem>& items, const std::function<bool()>* stop);
  TokenId SampleAt(const Output& at, int32_t* generated);
  Result<std::vector<TokenId>> Message(std::string_view role, std::string_view content, bool user_text,
                                       bool sanitize) const;
  Status CheckSequence(int32_t sequence) const;  // mu_ held
  // A sequence's tokens and pieces as bytes, and back (mu_ held).
  std::string EncodeSequence(int32_t sequence) const;
  Status DecodeSequence(int32_t sequence, const std::string& state);
  size_t TokensHeld() const;  // mu_ held: all sequences together
  bool ShapeSensitive() const { return options_.memory == FakeMemory::kRecurrent && options_.shape_sensitive; }
  // The piece each item of a call is decoded in, as llama.cpp's split_equal cuts the call.
  std::vector<int32_t> Pieces(const std::vector<DecodeItem>& items) const;

  const FakeEngineOptions options_;
  ModelInfo info_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool loaded_ = true;
  std::vector<std::vector<TokenId>> memory_;  // per sequence
  std::vector<std::vector<int32_t>> pieces_;  // per sequence and token: the piece it was decoded in
  struct Sampled {
    int32_t position = -1;
    TokenId token = 0;
  };
  std::vector<Sampled> sampled_;              // per sequence: the token sampled to go next
  struct Drafted {
    int32_t position = -1;  // of the first draft token
    std::vector<TokenId> tokens;
  };
  std::vector<Drafted> drafted_;              // per sequence: the last draft
  std::vector<size_t> rollback_floor_;        // per sequence: recurrent memory may be cut down to this
  int64_t draft_tokens_decoded_ = 0, accepted_reported_ = 0;
  std::vector<DecodeItem> last_batch_;        // empty after a failed decode
  std::vector<std::vector<DecodeItem>> batches_, failed_batches_, stopped_batches_;
  int64_t decoded_tokens_ = 0, prompt_tokens_decoded_ = 0, refused_ = 0, releases_ = 0;
  bool working_memory_ = true;  // false between ReleaseWorkingMemory and the next DecodeBatch
  int32_t fail_next_ = 0;
  bool hold_ = false;
  bool held_ = false;          // a DecodeBatch call blocked since the last HoldDecodes
  uint64_t release_epoch_ = 0;  // counts ReleaseDecodes calls
};

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_FAKE_ENGINE_H_
