// One tensor of a synthetic model: its GGUF name, shape, storage type and how its values are
// made. Shared by the Qwen3 and Qwen3.5 layouts and by the writer that streams them.
#ifndef LLMD_TOOLS_MKMODEL_TENSOR_SPEC_H_
#define LLMD_TOOLS_MKMODEL_TENSOR_SPEC_H_

#include <cstdint>
#include <string>

namespace llmd::mkmodel {

enum class Fill {
  kRandom,    // uniform with the requested standard deviation
  kOnes,      // norm weights and biases the model expects at 1
  kNegative,  // uniform in [-16, -1): the GDN decay -exp(A_log) must be negative
};

struct TensorSpec {
  std::string name;
  int64_t ne0, ne1;  // ggml order; ne1 == 0: a vector
  Fill fill;
  bool f32;          // stored F32 (vectors, conv kernels); otherwise F16, quantized later
};

}  // namespace llmd::mkmodel

#endif  // LLMD_TOOLS_MKMODEL_TENSOR_SPEC_H_
