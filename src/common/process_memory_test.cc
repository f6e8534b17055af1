#include "common/process_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace llmd {
namespace {

TEST(ProcessMemory, CountsTouchedAnonymousMemory) {
  const ProcessMemory before = ReadProcessMemory();
  ASSERT_GT(before.resident, 0u);
  EXPECT_GE(before.peak_resident, before.resident);
  constexpr size_t kSize = 64u << 20;
  void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memset(mem, 1, kSize);
  const ProcessMemory after = ReadProcessMemory();
  EXPECT_GE(after.resident_anon, before.resident_anon + kSize / 2);
  munmap(mem, kSize);
}

TEST(ProcessMemory, MappedFileResidentBytesCountsOnlyThatFile) {
  char path[] = "/tmp/llmd-process-memory-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  constexpr size_t kSize = 8u << 20;
  ASSERT_EQ(ftruncate(fd, kSize), 0);
  EXPECT_EQ(MappedFileResidentBytes(path), 0u);  // not mapped yet
  auto* mem = static_cast<volatile char*>(mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE, fd, 0));
  ASSERT_NE(mem, MAP_FAILED);
  EXPECT_LT(MappedFileResidentBytes(path), kSize / 2);  // mapped, its pages not yet read: not resident
  uint64_t sum = 0;
  for (size_t i = 0; i < kSize; i += 4096) sum += static_cast<unsigned char>(mem[i]);  // fault every page in
  EXPECT_EQ(sum, 0u);
  EXPECT_GE(MappedFileResidentBytes(path), kSize / 2);
  EXPECT_EQ(MappedFileResidentBytes(std::string(path) + "-other"), 0u);
  EXPECT_EQ(MappedFileResidentBytes(""), 0u);
  munmap(const_cast<char*>(mem), kSize);
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace llmd
