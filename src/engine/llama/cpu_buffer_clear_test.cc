// patches/llama.cpp/0001: clearing a CPU buffer to zero gives its pages back to the kernel,
// and the buffer still reads as zeros. Fails if the patch is missing or stops working.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "ggml-backend.h"

namespace {

// Pages of [base, base + size) resident in memory, by mincore.
size_t ResidentPages(void* base, size_t size) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(base) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(base) + size;
  std::vector<unsigned char> vec((end - begin + page - 1) / page);
  EXPECT_EQ(mincore(reinterpret_cast<void*>(begin), end - begin, vec.data()), 0);
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(CpuBufferClear, ZeroingReleasesPagesAndReadsZero) {
  constexpr size_t kSize = 64u << 20;
  ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), kSize);
  ASSERT_NE(buf, nullptr);
  auto* base = static_cast<uint8_t*>(ggml_backend_buffer_get_base(buf));
  const size_t pages = kSize / static_cast<size_t>(sysconf(_SC_PAGESIZE));

  std::memset(base, 0xab, kSize);  // every page committed
  EXPECT_GE(ResidentPages(base, kSize), pages - 2);

  ggml_backend_buffer_clear(buf, 0);
  EXPECT_LE(ResidentPages(base, kSize), 2u) << "clearing to zero kept the pages resident";
  for (size_t i = 0; i < kSize; i += 4093) ASSERT_EQ(base[i], 0) << "at byte " << i;
  EXPECT_EQ(base[0], 0);
  EXPECT_EQ(base[kSize - 1], 0);

  // Another value is a plain memset.
  ggml_backend_buffer_clear(buf, 7);
  EXPECT_EQ(base[kSize / 2], 7);
  EXPECT_GE(ResidentPages(base, kSize), pages - 2);
  ggml_backend_buffer_free(buf);
}

TEST(CpuBufferClear, ABufferFromAPointerIsClearedInPlace) {
  // A buffer over memory ggml does not own (a file mapping, say) must be written, not dropped.
  constexpr size_t kSize = 4u << 20;
  void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memset(mem, 0xcd, kSize);
  ggml_backend_buffer_t buf = ggml_backend_cpu_buffer_from_ptr(mem, kSize);
  ggml_backend_buffer_clear(buf, 0);
  EXPECT_EQ(static_cast<uint8_t*>(mem)[kSize / 2], 0);
  EXPECT_GE(ResidentPages(mem, kSize), kSize / static_cast<size_t>(sysconf(_SC_PAGESIZE)) - 2);
  ggml_backend_buffer_free(buf);
  munmap(mem, kSize);
}

}  // namespace
