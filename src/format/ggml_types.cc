#include "format/ggml_types.h"

#include <array>

namespace llmd::format {
namespace {

// Generated from the pinned ggml with ggml_type_name/ggml_blck_size/ggml_type_size;
// ggml_types_test checks it against the library when llama.cpp is built.
constexpr std::array kTypes = {
    GgmlTypeInfo{0, "f32", 1, 4},
    GgmlTypeInfo{1, "f16", 1, 2},
    GgmlTypeInfo{2, "q4_0", 32, 18},
    GgmlTypeInfo{3, "q4_1", 32, 20},
    GgmlTypeInfo{6, "q5_0", 32, 22},
    GgmlTypeInfo{7, "q5_1", 32, 24},
    GgmlTypeInfo{8, "q8_0", 32, 34},
    GgmlTypeInfo{9, "q8_1", 32, 36},
    GgmlTypeInfo{10, "q2_K", 256, 84},
    GgmlTypeInfo{11, "q3_K", 256, 110},
    GgmlTypeInfo{12, "q4_K", 256, 144},
    GgmlTypeInfo{13, "q5_K", 256, 176},
    GgmlTypeInfo{14, "q6_K", 256, 210},
    GgmlTypeInfo{15, "q8_K", 256, 292},
    GgmlTypeInfo{16, "iq2_xxs", 256, 66},
    GgmlTypeInfo{17, "iq2_xs", 256, 74},
    GgmlTypeInfo{18, "iq3_xxs", 256, 98},
    GgmlTypeInfo{19, "iq1_s", 256, 50},
    GgmlTypeInfo{20, "iq4_nl", 32, 18},
    GgmlTypeInfo{21, "iq3_s", 256, 110},
    GgmlTypeInfo{22, "iq2_s", 256, 82},
    GgmlTypeInfo{23, "iq4_xs", 256, 136},
    GgmlTypeInfo{24, "i8", 1, 1},
    GgmlTypeInfo{25, "i16", 1, 2},
    GgmlTypeInfo{26, "i32", 1, 4},
    GgmlTypeInfo{27, "i64", 1, 8},
    GgmlTypeInfo{28, "f64", 1, 8},
    GgmlTypeInfo{29, "iq1_m", 256, 56},
    GgmlTypeInfo{30, "bf16", 1, 2},
    GgmlTypeInfo{34, "tq1_0", 256, 54},
    GgmlTypeInfo{35, "tq2_0", 256, 66},
    GgmlTypeInfo{39, "mxfp4", 32, 17},
    GgmlTypeInfo{40, "nvfp4", 64, 36},
    GgmlTypeInfo{41, "q1_0", 128, 18},
    GgmlTypeInfo{42, "q2_0", 64, 18},
};

}  // namespace

const GgmlTypeInfo* FindGgmlType(uint32_t id) {
  for (const auto& t : kTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

}  // namespace llmd::format
