// speculative = mtp on the real engine, below the scheduler: the drafts of llmd's MTP driver
// are llama.cpp's own (common_speculative's draft-mtp on the same file and prompt), and the
// hidden state the MTP layer needs follows each sequence: through a step that prefills
// several, a rollback, and a checkpoint restored into another sequence, as the scheduler's
// prefix reuse does it.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "engine/llama/llama_engine.h"
#include "llama-cpp.h"
#include "llama.h"
#include "speculative.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

constexpr int32_t kDraftMax = 6;
constexpr int32_t kContext = 512;

// A prompt of n tokens, the same on both sides.
std::vector<engine::TokenId> Prompt(engine::Engine& e, int32_t n) {
  auto t = e.Tokenize("The quick brown fox jumps over the lazy dog while the cat sleeps in the warm sun, "
                      "and the birds sing their morning songs in the tall green trees by the river.",
                      false, false);
  EXPECT_TRUE(t.has_value());
  std::vector<engine::TokenId> out;
  while (out.size() < static_cast<size_t>(n)) out.push_back((*t)[out.size() % t->size()]);  // the text again
  return out;
}

Result<std::unique_ptr<engine::Engine>> LoadMtp(int32_t sequences, int32_t batch_tokens = 512) {
  auto e = engine::NewLlamaEngine();
  engine::EngineConfig c;
  c.model_path = Qwen35TinyMtpPath();
  c.context_tokens = kContext;
  c.sequences = sequences;
  c.batch_tokens = batch_tokens;
  c.threads = kEngineThreads;
  c.speculative.mode = engine::SpeculativeMode::kMtp;
  c.speculative.draft_max = kDraftMax;
  LLMD_RETURN_IF_ERROR(e->Load(c));
  return e;
}

// Decodes tokens [from, to) of `prompt` into `sequence`, logits at the last.
Status Prefill(engine::Engine& e, int32_t sequence, const std::vector<engine::TokenId>& prompt, size_t from,
               size_t to) {
  std::vector<engine::DecodeItem> items;
  for (size_t i = from; i < to; ++i) {
    items.push_back({sequence, static_cast<int32_t>(i), prompt[i], i + 1 == to});
  }
  return e.DecodeBatch(items);
}

// The greedy token at batch item `output` of the last decode, then the MTP layer's draft
// after it.
std::vector<engine::TokenId> DraftAfter(engine::Engine& e, int32_t sequence, const std::vector<engine::TokenId>& held,
                                        int32_t output, engine::TokenId* last) {
  auto sampler = e.NewSampler(engine::SamplingParams::Greedy(), held);
  EXPECT_TRUE(sampler.has_value());
  *last = (*sampler)->Sample({.index = output});
  std::vector<engine::DraftRequest> r{{.sequence = sequence, .history = held, .last = *last, .max_tokens = kDraftMax}};
  EXPECT_TRUE(e.Draft(&r).ok());
  return r[0].draft;
}

// llama.cpp's draft-mtp on the same file: the target and MTP contexts made as llmd makes them
// (one sequence of kContext tokens, separate streams), the prompt decoded in one batch.
std::vector<llama_token> LlamaCppDraft(const std::vector<llama_token>& prompt, llama_token* last) {
  llama_model_params mp = llama_model_default_params();
  mp.load_mtp = true;
  llama_model_ptr model(llama_model_load_from_file(Qwen35TinyMtpPath().c_str(), mp));
  if (!model) return {};
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = kContext;
  cp.kv_unified = false;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_seq_max = 1;
  cp.n_outputs_max = 1 + kDraftMax;
  cp.n_rs_seq = kDraftMax;
  cp.n_threads = cp.n_threads_batch = kEngineThreads;  // as llmd's engine above
  llama_context_ptr target(llama_init_from_model(model.get(), cp));
  llama_context_params dp = cp;
  dp.n_outputs_max = 1;
  dp.n_rs_seq = 0;
  dp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
  dp.ctx_other = target.get();
  llama_context_ptr mtp(llama_init_from_model(model.get(), dp));
  if (!target || !mtp) return {};
  common_params_speculative sp;
  sp.types = {COMMON_SPECULATIVE_TYPE_DRAFT_MTP};
  sp.draft.n_max = kDraftMax;
  sp.draft.n_min = 0;
  sp.draft.p_min = 0.0f;
  sp.draft.ctx_tgt = target.get();
  sp.draft.ctx_dft = mtp.get();
  common_speculative_ptr spec(common_speculative_init(sp, 1));
  llama_batch batch = llama_batch_init(static_cast<int32_t>(prompt.size()), 0, 1);
  for (size_t i = 0; i < prompt.size(); ++i) {
    common_batch_add(batch, prompt[i], static_cast<llama_pos>(i), {0}, i + 1 == prompt.size());
  }
  std::vector<llama_token> result;
  if (llama_decode(target.get(), batch) == 0 && common_speculative_process(spec.get(), batch)) {
    const float* logits = llama_get_logits_ith(target.get(), -1);
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    *last = static_cast<llama_token>(std::max_element(logits, logits + n_vocab) - logits);
    llama_tokens history(prompt.begin(), prompt.end());
    common_speculative_get_draft_params(spec.get(), 0) = {true, kDraftMax, static_cast<llama_pos>(prompt.size()), *last,
                                                          &history, &result};
    common_speculative_draft(spec.get());
  }
  llama_batch_free(batch);
  return result;
}

TEST(SpeculativeMtp, DraftsAreLlamaCppsOwn) {
  auto e = LoadMtp(1);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_EQ((*e)->model_info().speculative.mode, engine::SpeculativeMode::kMtp);
  EXPECT_EQ((*e)->model_info().speculative.draft_max, kDraftMax);
  const auto prompt = Prompt(**e, 24);
  ASSERT_TRUE(Prefill(**e, 0, prompt, 0, prompt.size()).ok());
  engine::TokenId last = -1, reference_last = -2;
  const auto draft = DraftAfter(**e, 0, prompt, static_cast<int32_t>(prompt.size()) - 1, &last);
  const auto reference = LlamaCppDraft(prompt, &reference_last);
  EXPECT_EQ(last, reference_last);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kDraftMax));  // p_min 0: always a whole draft
  EXPECT_EQ(draft, std::vector<engine::TokenId>(reference.begin(), reference.end()));
}

// A prompt longer than the MTP layer's backlog (256 tokens), prefilled in pieces of a small
// batch: the backlog is decoded in batch-sized pieces when it is full and the rest before the
// draft, which must still be llama.cpp's draft after the whole prompt in one batch.
TEST(SpeculativeMtp, ALongPromptPrefilledInPiecesDraftsAsLlamaCpp) {
  constexpr size_t kBatch = 64;
  auto e = LoadMtp(1, kBatch);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  const auto prompt = Prompt(**e, 300);
  for (size_t from = 0; from < prompt.size(); from += kBatch) {
    ASSERT_TRUE(Prefill(**e, 0, prompt, from, std::min(prompt.size(), from + kBatch)).ok());
  }
  engine::TokenId last = -1, reference_last = -2;
  const auto last_item = static_cast<int32_t>((prompt.size() - 1) % kBatch);
  const auto draft = DraftAfter(**e, 0, prompt, last_item, &last);
  const auto reference = LlamaCppDraft(prompt, &reference_last);
  EXPECT_EQ(last, reference_last);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kDraftMax));
  EXPECT_EQ(draft, std::vector<engine::TokenId>(reference.begin(), reference.end()));
}

// Sequence 0 prefills a prompt in two pieces and saves a checkpoint between them; sequence 1
// gets sequence 0's memory, the checkpoint and a cut back to it (prefix reuse on a hybrid
// model), then prefills the rest itself. Both then hold the same tokens and must draft alike:
// the MTP layer's first entry after the cut pairs with the hidden state the checkpoint kept.
TEST(SpeculativeMtp, ARestoredCheckpointDraftsAsTheSequenceItCameFrom) {
  auto e = LoadMtp(2);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  engine::Engine& engine = **e;
  ASSERT_TRUE(engine.model_info().memory.state_checkpoints);
  const auto prompt = Prompt(engine, 24);
  constexpr size_t kCut = 10;
  ASSERT_TRUE(Prefill(engine, 0, prompt, 0, kCut).ok());
  auto checkpoint = engine.SaveSequenceState(0);
  ASSERT_TRUE(checkpoint.has_value()) << checkpoint.error().ToString();
  ASSERT_TRUE(Prefill(engine, 0, prompt, kCut, prompt.size()).ok());
  engine::TokenId last0 = -1, last1 = -2;
  const auto last_item = static_cast<int32_t>(prompt.size() - kCut) - 1;
  const auto draft0 = DraftAfter(engine, 0, prompt, last_item, &last0);

  ASSERT_TRUE(engine.CopySequence(0, 1).ok());
  ASSERT_TRUE(engine.RestoreSequenceState(1, *checkpoint).ok());
  ASSERT_TRUE(engine.TruncateSequence(1, kCut).ok());
  ASSERT_TRUE(Prefill(engine, 1, prompt, kCut, prompt.size()).ok());
  const auto draft1 = DraftAfter(engine, 1, prompt, last_item, &last1);
  EXPECT_EQ(last1, last0);
  EXPECT_EQ(draft1.size(), static_cast<size_t>(kDraftMax));
  EXPECT_EQ(draft1, draft0);
}

// Two prompts of different lengths prefilled in one step (the scheduler's batch: each
// sequence's tokens together) are split by llama.cpp into micro-batches that interleave the
// sequences; each token must still pair with its own hidden state (llama.cpp patch 0002), so
// each sequence drafts as it does when prefilled alone.
TEST(SpeculativeMtp, PromptsPrefilledTogetherDraftAsEachAlone) {
  auto together = LoadMtp(2);
  auto alone = LoadMtp(2);
  ASSERT_TRUE(together.has_value() && alone.has_value());
  const auto long_prompt = Prompt(**together, 30);
  auto short_prompt = Prompt(**together, 20);
  std::reverse(short_prompt.begin(), short_prompt.end());  // another text
  std::vector<engine::DecodeItem> items;
  for (size_t i = 0; i < long_prompt.size(); ++i) {
    items.push_back({0, static_cast<int32_t>(i), long_prompt[i], i + 1 == long_prompt.size()});
  }
  for (size_t i = 0; i < short_prompt.size(); ++i) {
    items.push_back({1, static_cast<int32_t>(i), short_prompt[i], i + 1 == short_prompt.size()});
  }
  ASSERT_TRUE((*together)->DecodeBatch(items).ok());
  ASSERT_TRUE(Prefill(**alone, 0, long_prompt, 0, long_prompt.size()).ok());
  ASSERT_TRUE(Prefill(**alone, 1, short_prompt, 0, short_prompt.size()).ok());
  const engine::TokenId last = 11;  // the same pending token for all four drafts
  for (int32_t seq : {0, 1}) {
    const auto& held = seq == 0 ? long_prompt : short_prompt;
    std::vector<engine::DraftRequest> a{{.sequence = seq, .history = held, .last = last, .max_tokens = kDraftMax}};
    std::vector<engine::DraftRequest> b = a;
    ASSERT_TRUE((*together)->Draft(&a).ok());
    ASSERT_TRUE((*alone)->Draft(&b).ok());
    EXPECT_EQ(a[0].draft.size(), static_cast<size_t>(kDraftMax));
    EXPECT_EQ(a[0].draft, b[0].draft) << "sequence " << seq;
  }
}

// A rejected block is taken back: the next draft starts from the hidden state of the last
// token kept, as it would had the rejected tokens never been decoded.
TEST(SpeculativeMtp, ARolledBackBlockDraftsAsIfItHadNotBeenDecoded) {
  auto e = LoadMtp(2);
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  engine::Engine& engine = **e;
  auto prompt = Prompt(engine, 20);
  // Sequence 0: the prompt and then four more tokens as one verified block, of which the
  // first two are kept. Sequence 1: the prompt and those two alone.
  const std::vector<engine::TokenId> block = {prompt[3], prompt[4], prompt[5], prompt[6]};
  ASSERT_TRUE(Prefill(engine, 0, prompt, 0, prompt.size()).ok());
  std::vector<engine::DecodeItem> items;
  for (size_t i = 0; i < block.size(); ++i) {
    items.push_back({0, static_cast<int32_t>(prompt.size() + i), block[i], true});
  }
  ASSERT_TRUE(engine.DecodeBatch(items).ok());
  engine.AcceptDraft(0, 1);  // the block's first token was sampled, its second accepted
  ASSERT_TRUE(engine.TruncateSequence(0, static_cast<int32_t>(prompt.size() + 2)).ok());
  auto kept = prompt;
  kept.insert(kept.end(), block.begin(), block.begin() + 2);
  ASSERT_TRUE(Prefill(engine, 1, kept, 0, kept.size()).ok());
  std::vector<engine::DraftRequest> r{{.sequence = 0, .history = kept, .last = 7, .max_tokens = kDraftMax},
                                      {.sequence = 1, .history = kept, .last = 7, .max_tokens = kDraftMax}};
  ASSERT_TRUE(engine.Draft(&r).ok());
  EXPECT_EQ(r[0].draft.size(), static_cast<size_t>(kDraftMax));
  EXPECT_EQ(r[0].draft, r[1].draft);
}

}  // namespace
}  // namespace llmd::testing
