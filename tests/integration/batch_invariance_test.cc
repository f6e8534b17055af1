// A sequence's logits are the same bits however the work around it was arranged, with the real
// llama.cpp engine on the tiny dense model (the default pool, which is a KV stream per
// sequence as large as the pool; and a cache per sequence, `--context N`) and the tiny hybrid
// (Gated DeltaNet + attention, the default pool too):
// - its prompt prefilled alone or in one call beside another prompt of the same length (a
//   call as sched::ShapeStableCalls builds it);
// - with or without another sequence's cells freed before its own;
// - (dense) its prompt prefilled in one call, or after a cached prefix: the rest in a call of
//   its own, down to the last token alone (how the worker reuses a prefix).
// Why it holds: each sequence has a KV stream of its own, and a prompt call's tokens take the
// flash attention kernel of their cold prefill (Engine::DecodeBatch, engine/prompt_kernels.h,
// llama.cpp patch 0004). In one pool the sequences share (llama.cpp's kv_unified, which the
// default pool was), ggml's CPU flash attention computes a row differently with the
// micro-batch's row count (two 40-token prompts in one micro-batch are 80 rows, which take the
// tiled kernel; one alone took the row-by-row kernel) and with where the sequence's cells lie
// (the tiles are 64 cells of the pool; the row-by-row kernel adds the cells in cell order, not
// position order once a new token fills a cell freed before the sequence's first): the first
// two cases then gave other log-probabilities (and, with other prompts, other greedy tokens);
// without patch 0004 the cached prefix did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using engine::DecodeItem;
using engine::TokenId;

constexpr size_t kPromptTokens = 40;  // two in one micro-batch: 80 rows, at least ggml's 64-row tile
constexpr int kSteps = 12;

// What a sequence produced: each step's greedy token, its log-probability and the top 4.
struct Trace {
  std::vector<TokenId> tokens;
  std::vector<float> logprobs;
};

void ExpectSame(const Trace& got, const Trace& alone, const std::string& what) {
  EXPECT_EQ(got.tokens, alone.tokens) << what << ": other greedy tokens than alone";
  EXPECT_EQ(got.logprobs, alone.logprobs) << what << ": other log-probabilities than alone";
}

struct Sequence {
  int32_t id = 0;
  std::vector<TokenId> prompt;
  std::unique_ptr<engine::Sampler> sampler;
  Trace trace;
  int32_t held = 0;
  TokenId next = 0;
};

// A model and the context it is loaded with.
struct Case {
  std::string name;
  std::function<std::string()> path;
  int32_t context_tokens;  // 0: automatic
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class BatchInvariance : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    engine::EngineConfig config;
    config.model_path = GetParam().path();
    config.context_tokens = GetParam().context_tokens;
    config.kv_budget_bytes = 64ull << 20;
    config.sequences = 4;
    config.threads = kEngineThreads;
    engine_ = engine::NewLlamaEngine();
    const Status st = engine_->Load(config);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (config.context_tokens == 0) {
      ASSERT_GT(engine_->model_info().pool_tokens, 0) << "the automatic context is one pool";
      ASSERT_EQ(engine_->model_info().context_tokens, engine_->model_info().pool_tokens);
    }
    a_ = PromptOf("The library opens at nine on weekdays and at ten on Sundays, because the staff spend "
                  "Sunday mornings sorting the returns of the week, mending torn covers, shelving the new "
                  "arrivals and answering the letters that readers leave in the box by the door.");
    b_ = PromptOf("Our train left the coast before dawn and climbed through pine forests, past frozen "
                  "lakes and sleeping villages, until the first light reached the high mountain pass where "
                  "the old stone hut stands, and we stopped there for bread, cheese and hot tea.");
  }

  bool Dense() const { return !engine_->model_info().memory.state_checkpoints; }

  std::vector<TokenId> PromptOf(const std::string& text) {
    auto tokens = engine_->Tokenize(text, true, false);
    EXPECT_TRUE(tokens.has_value());
    EXPECT_GE(tokens->size(), kPromptTokens);
    tokens->resize(kPromptTokens);
    return *tokens;
  }

  std::unique_ptr<Sequence> NewSequence(int32_t id, const std::vector<TokenId>& prompt) {
    auto s = std::make_unique<Sequence>();
    s->id = id;
    s->prompt = prompt;
    auto sampler = engine_->NewSampler(engine::SamplingParams::Greedy(), {});
    EXPECT_TRUE(sampler.has_value());
    s->sampler = std::move(*sampler);
    return s;
  }

  // One decode call: every sequence's prompt from `from` on, up to `to` (prefill, a prompt
  // call) or its next token, in sequence order.
  void Decode(const std::vector<Sequence*>& seqs, bool prefill, size_t from = 0, size_t to = SIZE_MAX) {
    std::vector<DecodeItem> items;
    for (Sequence* s : seqs) {
      if (prefill) {
        for (size_t i = from; i < std::min(to, s->prompt.size()); ++i) {
          items.push_back({s->id, static_cast<int32_t>(i), s->prompt[i], i + 1 == s->prompt.size(),
                           static_cast<int32_t>(s->prompt.size())});
        }
      } else {
        items.push_back({s->id, s->held, s->next, true});
      }
    }
    const Status st = engine_->DecodeBatch(items);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].logits) continue;
      for (Sequence* s : seqs) {
        if (s->id != items[i].sequence) continue;
        const auto index = static_cast<int32_t>(i);
        s->next = s->sampler->Sample({.index = index});
        const engine::TokenLogprob lp = s->sampler->Logprob({.index = index}, s->next, 4);
        s->trace.tokens.push_back(s->next);
        s->trace.logprobs.push_back(lp.logprob);
        for (const auto& [text, logprob] : lp.top) s->trace.logprobs.push_back(logprob);
        s->held = prefill ? static_cast<int32_t>(s->prompt.size()) : s->held + 1;
      }
    }
  }

  // The sequences generate together, one decode call per step.
  void Generate(const std::vector<Sequence*>& seqs) {
    for (int i = 0; i < kSteps; ++i) Decode(seqs, false);
  }

  void ClearAll() {
    for (int32_t s = 0; s < 4; ++s) ASSERT_TRUE(engine_->TruncateSequence(s, 0).ok());
  }

  // `prompt` on sequence 0 of a memory that holds nothing else.
  Trace Alone(const std::vector<TokenId>& prompt) {
    ClearAll();
    auto s = NewSequence(0, prompt);
    Decode({s.get()}, true);
    Generate({s.get()});
    return s->trace;
  }

  std::unique_ptr<engine::Engine> engine_;
  std::vector<TokenId> a_, b_;
};

TEST_P(BatchInvariance, PromptsPrefilledInOneCallGiveEachItsAnswerAlone) {
  const Trace a_alone = Alone(a_), b_alone = Alone(b_);
  ASSERT_EQ(a_alone.tokens.size(), static_cast<size_t>(kSteps + 1));
  ClearAll();
  auto a = NewSequence(1, a_), b = NewSequence(2, b_);
  Decode({a.get(), b.get()}, true);
  Generate({a.get(), b.get()});
  ExpectSame(a->trace, a_alone, "sequence 1");
  ExpectSame(b->trace, b_alone, "sequence 2");
}

TEST_P(BatchInvariance, ASequenceAfterCellsFreedBeforeItsOwnGivesItsAnswerAlone) {
  const Trace alone = Alone(a_);
  ClearAll();
  // Sequence 3 takes the first cells, sequence 0 the next ones; then sequence 3 is dropped, and
  // sequence 0 generates on.
  std::vector<TokenId> filler;
  while (filler.size() < 300) filler.insert(filler.end(), b_.begin(), b_.end());
  filler.resize(300);
  auto other = NewSequence(3, filler);
  Decode({other.get()}, true);
  auto s = NewSequence(0, a_);
  Decode({s.get()}, true);
  ASSERT_TRUE(engine_->TruncateSequence(3, 0).ok());
  Generate({s.get()});
  ExpectSame(s->trace, alone, "sequence 0");
}

// A 100-token prompt prefilled cold takes the tiled kernel (64 rows or more). After a cached
// prefix (another 100-token prompt's first 50 tokens, or this prompt's first 99) the rest is a
// shorter call, which by default took the row-by-row kernel and gave other logits: a greedy
// token could change with what the cache held. A prompt call takes the cold kernel instead.
TEST_P(BatchInvariance, APromptAfterACachedPrefixGivesItsColdPrefillsBits) {
  if (!Dense()) GTEST_SKIP() << "a hybrid reuses a prefix only at its prefill cuts (prefill_cuts_test)";
  std::vector<TokenId> prompt = a_;
  prompt.insert(prompt.end(), b_.begin(), b_.end());
  prompt.insert(prompt.end(), a_.begin(), a_.begin() + 20);  // 100 tokens
  std::vector<TokenId> other = prompt;                       // the same first 50, then other text
  std::copy(b_.begin(), b_.begin() + 40, other.begin() + 50);
  const Trace cold = Alone(prompt);
  for (const auto& [earlier, cached] : {std::pair{other, size_t{50}}, std::pair{prompt, size_t{99}}}) {
    ClearAll();
    auto before = NewSequence(0, earlier);
    Decode({before.get()}, true);
    ASSERT_TRUE(engine_->TruncateSequence(0, static_cast<int32_t>(cached)).ok());
    auto s = NewSequence(0, prompt);
    Decode({s.get()}, true, cached);
    Generate({s.get()});
    ExpectSame(s->trace, cold, std::to_string(cached) + " tokens cached");
  }
}

// A prompt longer than a micro-batch (prompt_call_tokens: n_ubatch): its last micro-batch of
// 48 rows is tiled cold (engine::ColdKernel: 6 rows or more of a prompt of 64 or more), and so
// is any rest of it after a cached prefix, down to its last token alone, where a call of that
// many rows would take ggml's row-by-row kernel. Prefilled as the worker does, a call never
// crossing a multiple of the micro-batch.
TEST_P(BatchInvariance, ALongPromptsLastMicroBatchAfterACachedPrefixGivesItsColdBits) {
  if (!Dense()) GTEST_SKIP() << "a hybrid reuses a prefix only at its prefill cuts (prefill_cuts_test)";
  const auto piece = static_cast<size_t>(engine_->model_info().memory.prompt_call_tokens);
  ASSERT_GT(piece, 0u);
  if (static_cast<size_t>(engine_->model_info().context_tokens) < piece + 64) {
    GTEST_SKIP() << "a cache of " << engine_->model_info().context_tokens << " tokens a sequence";
  }
  std::vector<TokenId> prompt;
  while (prompt.size() < piece + 48) {
    prompt.insert(prompt.end(), a_.begin(), a_.end());
    prompt.insert(prompt.end(), b_.begin(), b_.end());
  }
  prompt.resize(piece + 48);
  auto prefill = [&](Sequence* s, size_t from) {
    for (size_t at = from; at < prompt.size(); at = (at / piece + 1) * piece) {
      Decode({s}, true, at, (at / piece + 1) * piece);
    }
  };
  ClearAll();
  auto first = NewSequence(0, prompt);
  prefill(first.get(), 0);
  Generate({first.get()});
  const Trace cold = first->trace;
  for (const size_t cached : {piece + 20, piece + 43, piece + 47}) {
    ClearAll();
    auto before = NewSequence(0, prompt);
    prefill(before.get(), 0);
    ASSERT_TRUE(engine_->TruncateSequence(0, static_cast<int32_t>(cached)).ok());
    auto s = NewSequence(0, prompt);
    prefill(s.get(), cached);
    Generate({s.get()});
    ExpectSame(s->trace, cold, std::to_string(prompt.size() - cached) + " rows after a cached prefix");
  }
}

// A call stopped while it computes (an interactive request arrived: sched's step) keeps
// nothing: the prompt decoded again gives the bits it gives alone, and another sequence's
// memory is untouched. A hybrid's recurrent state is changed in place, so there the call runs
// whole whatever `stop` says.
TEST_P(BatchInvariance, ACallStoppedWhileItComputesKeepsNothing) {
  const Trace a_alone = Alone(a_), b_alone = Alone(b_);
  ClearAll();
  auto other = NewSequence(1, b_);
  Decode({other.get()}, true);
  std::vector<DecodeItem> items;
  for (size_t i = 0; i < a_.size(); ++i) {
    items.push_back({0, static_cast<int32_t>(i), a_[i], i + 1 == a_.size(), static_cast<int32_t>(a_.size())});
  }
  int asked = 0;
  ::testing::internal::CaptureStderr();
  const Status stopped = engine_->DecodeBatchUnlessStopped(items, [&asked] { return ++asked > 20; });
  const std::string logged = ::testing::internal::GetCapturedStderr();
  if (Dense()) {
    ASSERT_EQ(stopped.code(), StatusCode::kCancelled) << stopped.ToString();
    EXPECT_EQ(asked, 21) << "asked again after it said stop";
    // llama.cpp's lines for an aborted decode report nothing wrong: they are not printed.
    EXPECT_EQ(logged.find("decode"), std::string::npos) << logged;
  } else {
    ASSERT_TRUE(stopped.ok()) << stopped.ToString();
    EXPECT_EQ(asked, 0);
    ASSERT_TRUE(engine_->TruncateSequence(0, 0).ok());  // a recurrent state is dropped whole
  }
  auto s = NewSequence(0, a_);
  Decode({s.get()}, true);  // from position 0: refused if the stopped call had kept a cell
  Generate({s.get(), other.get()});
  ExpectSame(s->trace, a_alone, "after a stopped call");
  ExpectSame(other->trace, b_alone, "the other sequence");
}

INSTANTIATE_TEST_SUITE_P(Models, BatchInvariance,
                         ::testing::Values(Case{"DenseAutomatic", TinyModelPath, 0},
                                           Case{"DenseContextPerSequence", TinyModelPath, 512},
                                           Case{"HybridAutomatic", Qwen35TinyPath, 0}),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace llmd::testing
