// The dense default pool on the real llama.cpp engine (context 0, the daemon's default): each
// sequence has a KV stream as large as the pool (engine/llama/llama_context_setup.h,
// PoolAsStreams), and the engine holds the cells in use to the pool's total: a call that
// would hold more is refused with the numbers and changes nothing, any one sequence may use
// the whole pool, and a copy or an unpark that would overfill it is refused too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/llama/llama_engine.h"
#include "tests/support/test_models.h"

namespace llmd::testing {
namespace {

using engine::DecodeItem;
using engine::TokenId;

class KvPool : public ::testing::Test {
 protected:
  void SetUp() override {
    engine::EngineConfig config;
    config.model_path = TinyModelPath();
    config.context_tokens = 0;                 // automatic: one pool
    config.kv_budget_bytes = 8ull << 20;       // a small pool, quick to fill
    config.sequences = 2;
    config.threads = kEngineThreads;
    engine_ = engine::NewLlamaEngine();
    const Status st = engine_->Load(config);
    ASSERT_TRUE(st.ok()) << st.ToString();
    pool_ = engine_->model_info().pool_tokens;
    ASSERT_GT(pool_, 0);
    ASSERT_EQ(engine_->model_info().context_tokens, pool_) << "one sequence may use the whole pool";
  }

  // `n` tokens into `sequence` from position `from`, in calls of at most 512.
  Status Fill(int32_t sequence, int32_t from, int32_t n) {
    for (int32_t at = from; at < from + n;) {
      std::vector<DecodeItem> items;
      for (; at < from + n && items.size() < 512; ++at) items.push_back({sequence, at, 100 + at % 50, false});
      if (Status st = engine_->DecodeBatch(items); !st.ok()) return st;
    }
    return Status::Ok();
  }

  std::unique_ptr<engine::Engine> engine_;
  int32_t pool_ = 0;
};

TEST_F(KvPool, OneSequenceMayFillThePoolAndACallBeyondItIsRefusedChangingNothing) {
  ASSERT_TRUE(Fill(0, 0, pool_ - 10).ok());
  const Status over = Fill(1, 0, 11);
  ASSERT_EQ(over.code(), StatusCode::kResourceExhausted) << over.ToString();
  EXPECT_NE(over.message().find(std::to_string(pool_ - 10) + " of " + std::to_string(pool_) + " tokens held, 11 more"),
            std::string::npos)
      << over.message();
  // Nothing of the refused call was kept: exactly the room left still fits.
  EXPECT_TRUE(Fill(1, 0, 10).ok());
  EXPECT_EQ(Fill(1, 10, 1).code(), StatusCode::kResourceExhausted);
  // A cut frees its cells for the other sequence.
  ASSERT_TRUE(engine_->TruncateSequence(0, 100).ok());
  EXPECT_TRUE(Fill(1, 10, 200).ok());
}

TEST_F(KvPool, ACopyOrAnUnparkThatWouldOverfillThePoolIsRefused) {
  ASSERT_TRUE(Fill(0, 0, pool_ / 2 + 10).ok());
  const Status copy = engine_->CopySequence(0, 1);
  EXPECT_EQ(copy.code(), StatusCode::kResourceExhausted) << copy.ToString();
  ASSERT_TRUE(engine_->TruncateSequence(0, pool_ / 4).ok());
  ASSERT_TRUE(engine_->CopySequence(0, 1).ok()) << "a quarter of the pool, twice, fits";
  auto parked = engine_->ParkSequence(1);
  ASSERT_TRUE(parked.has_value()) << parked.error().ToString();
  // Sequence 0 now holds a token more than the parked quarter leaves.
  ASSERT_TRUE(Fill(0, pool_ / 4, pool_ - 2 * (pool_ / 4) + 1).ok());
  EXPECT_EQ(engine_->UnparkSequence(1, *parked).code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(engine_->TruncateSequence(0, pool_ - pool_ / 4).ok());
  EXPECT_TRUE(engine_->UnparkSequence(1, *parked).ok()) << "exactly the pool";
  EXPECT_EQ(Fill(0, pool_ - pool_ / 4, 1).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace llmd::testing
