#include "engine/prompt_kernels.h"

#include <gtest/gtest.h>

namespace llmd::engine {
namespace {

TEST(ColdKernel, FollowsTheRowsOfTheMicroBatchAPositionFallsIn) {
  // 600 tokens in 512-token micro-batches: 512 rows, then 88.
  EXPECT_EQ(ColdKernel(0, 600, 512), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(599, 600, 512), PromptKernel::kTiled);
  // 540: the second micro-batch has 28 rows; 518: 6; 517: 5; 514: 2; 513: one.
  EXPECT_EQ(ColdKernel(511, 540, 512), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(512, 540, 512), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(517, 518, 512), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(516, 517, 512), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(512, 514, 512), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(512, 513, 512), PromptKernel::kSingleRow);
  EXPECT_EQ(ColdKernel(0, 1, 512), PromptKernel::kSingleRow);
}

TEST(ColdKernel, APromptShorterThanATileIsComputedRowByRowAsLlamaCppDoes) {
  EXPECT_EQ(ColdKernel(0, 2, 512), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(0, 63, 512), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(62, 63, 512), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(0, 64, 512), PromptKernel::kTiled);
  // In micro-batches of 16: a 50-token prompt row by row; a 70-token one tiled, its last
  // micro-batch of 6 rows too; a 66-token prompt's last 2 rows row by row.
  EXPECT_EQ(ColdKernel(40, 50, 16), PromptKernel::kRowByRow);
  EXPECT_EQ(ColdKernel(0, 70, 16), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(69, 70, 16), PromptKernel::kTiled);
  EXPECT_EQ(ColdKernel(65, 66, 16), PromptKernel::kRowByRow);
}

TEST(SameKernelPrefix, KeepsWholeMicroBatchesOfTheSameKind) {
  // A 50-token prompt's rows (row by row) are not those of a 100-token prompt (tiled).
  EXPECT_EQ(SameKernelPrefix(50, 50, 100, 512), 0u);
  // Both prompts under 64 tokens, or both from 64: all of it.
  EXPECT_EQ(SameKernelPrefix(40, 50, 60, 512), 40u);
  EXPECT_EQ(SameKernelPrefix(99, 100, 300, 512), 99u);
  // Whole micro-batches of 512 are tiled for any prompt, and so is a last one of 6 rows or
  // more; one of 2 to 5 rows is row by row.
  EXPECT_EQ(SameKernelPrefix(530, 530, 700, 512), 530u);
  EXPECT_EQ(SameKernelPrefix(600, 600, 700, 512), 600u);
  EXPECT_EQ(SameKernelPrefix(515, 515, 700, 512), 512u);
  EXPECT_EQ(SameKernelPrefix(600, 600, 515, 512), 512u);
  // Nothing kept, nothing to check; no micro-batch size: all of it.
  EXPECT_EQ(SameKernelPrefix(0, 0, 100, 512), 0u);
  EXPECT_EQ(SameKernelPrefix(50, 50, 100, 0), 50u);
}

}  // namespace
}  // namespace llmd::engine
