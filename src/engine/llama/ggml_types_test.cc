// The pre-check's copy of ggml's type table must match the ggml it ships with.
#include "format/ggml_types.h"

#include <gtest/gtest.h>

#include "ggml.h"

namespace llmd::format {
namespace {

TEST(GgmlTypes, TableMatchesTheLinkedGgml) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const auto type = static_cast<ggml_type>(t);
    const GgmlTypeInfo* info = FindGgmlType(static_cast<uint32_t>(t));
    if (ggml_blck_size(type) == 0) {
      EXPECT_EQ(info, nullptr) << "removed type " << t;
      continue;
    }
    ASSERT_NE(info, nullptr) << ggml_type_name(type);
    EXPECT_EQ(info->name, ggml_type_name(type));
    EXPECT_EQ(info->block_size, ggml_blck_size(type));
    EXPECT_EQ(info->type_size, ggml_type_size(type));
  }
  EXPECT_EQ(FindGgmlType(GGML_TYPE_COUNT), nullptr);
}

}  // namespace
}  // namespace llmd::format
