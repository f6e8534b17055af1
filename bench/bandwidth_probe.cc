// Memory read bandwidth, the physical limit of decode speed: a decode step reads every
// weight once, so tok/s can never exceed bandwidth / bytes read per token.
//
// usage: bandwidth_probe [--threads N] [--mib M] [--reps R]
// Sums a buffer much larger than the caches with N threads, R times; prints the best GB/s.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  int threads = 2, reps = 5;
  size_t mib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--mib") mib = std::max(64, std::atoi(argv[i + 1]));
    else if (a == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: bandwidth_probe [--threads N] [--mib M] [--reps R]\n");
      return 2;
    }
  }
  const size_t words = mib * 1024 * 1024 / sizeof(uint64_t);
  std::vector<uint64_t> buf(words);
  for (size_t i = 0; i < words; ++i) buf[i] = i * 0x9E3779B97F4A7C15ull;  // touch every page
  double best = 0;
  uint64_t keep = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<uint64_t> sums(threads);
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t lo = words * t / threads, hi = words * (t + 1) / threads;
        uint64_t a = 0, b = 0, c = 0, d = 0;  // four chains so the adds are not the limit
        for (size_t i = lo; i + 3 < hi; i += 4) {
          a += buf[i];
          b += buf[i + 1];
          c += buf[i + 2];
          d += buf[i + 3];
        }
        sums[t] = a + b + c + d;
      });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
    for (auto v : sums) keep += v;
  }
  std::printf("{\"read_gb_per_s\": %.3f, \"threads\": %d, \"mib\": %zu, \"checksum\": %llu}\n", best, threads, mib,
              static_cast<unsigned long long>(keep & 0xFF));
  return 0;
}
