// CpuPlacement: which CPUs the engine's threads run on, and how many threads it uses.
//
// On big.LITTLE phones and boards, decode speed collapses when the scheduler parks the
// compute threads on little cores (seed 002 §7.2: ~16 tok/s standalone, < 1 tok/s in-app), and
// more threads than big cores is slower again (§7.3). So by default ("auto") llmd finds the
// fast cores from sysfs and pins its threads to them:
//  - a CPU's speed is its `cpu_capacity` (arm64, 0..1024) or else `cpufreq/cpuinfo_max_freq`;
//  - the fast cores are the online CPUs with at least 60 % of the fastest one's speed (the big
//    and prime cores of a 2+5+1 layout, not the little ones);
//  - when every online CPU is equally fast (a laptop or server) nothing is pinned: pinning
//    there only fights the kernel's balancing and other processes.
// An explicit list ("4-7", "0,2,4") pins to exactly those CPUs; "none" never pins.
//
// Pure: reads only under `sysfs_cpu_dir`, so tests use a fake tree.
#ifndef LLMD_ENGINE_CPU_PLACEMENT_H_
#define LLMD_ENGINE_CPU_PLACEMENT_H_

#include <string>
#include <vector>

#include "llmd/result.h"

namespace llmd::engine {

struct CpuPlacement {
  std::vector<int> cpus;  // the CPUs threads may run on; empty: any (not pinned)
  int threads = 1;        // how many compute threads
  std::string source;     // how speeds were known: "cpu_capacity", "cpuinfo_max_freq", "none"
  std::string reason;     // one line for the startup log

  // "4-7" style text of `cpus` ("any" when empty).
  std::string CpuListText() const;
};

// Parses a Linux CPU list ("0-3,6,8-9"). InvalidArgument on anything else, or on a CPU id
// over 4095.
Result<std::vector<int>> ParseCpuList(const std::string& text);

// Plans placement. `affinity`: "auto", "none" or a CPU list. `threads`: 0 picks one per chosen
// CPU (or per online CPU when not pinned); more threads than chosen CPUs is allowed (they
// share them). A list naming an offline or missing CPU is InvalidArgument.
Result<CpuPlacement> PlanCpuPlacement(const std::string& sysfs_cpu_dir, const std::string& affinity,
                                      int threads);

}  // namespace llmd::engine

#endif  // LLMD_ENGINE_CPU_PLACEMENT_H_
