// HeapPolicy: how dlaunch-worker sets glibc's allocator before it trains.
//
// A training step allocates and frees the same large buffers every time (a convolution's
// unfolded input is tens of MiB at batch 64). glibc serves blocks above its mmap threshold with
// a fresh mmap and unmaps them on free, so every step faults every page of them in again, and
// where page faults are expensive (virtual machines) that can cost more than the arithmetic.
// Keeping freed memory in the heap (no mmap for blocks, no trimming) makes each step reuse the
// previous step's pages, as PyTorch's own CPU performance guide suggests (or jemalloc/tcmalloc).
// A user who tunes the allocator themselves (MALLOC_*_ variables, GLIBC_TUNABLES, a preloaded
// allocator) or sets DLAUNCH_WORKER_HEAP=system keeps their choice. Pure, but for Apply.
#pragma once

#include <string>

#include "common/environment.h"

namespace dlaunch::worker {

struct HeapPolicy {
  bool keep_freed_memory = false;  // mallopt(M_MMAP_MAX, 0) and mallopt(M_TRIM_THRESHOLD, max)
  std::string why;                 // when not: what the user chose instead
};

HeapPolicy ChooseHeapPolicy(const EnvLookup& env);

// Applies `policy` to this process's glibc malloc; false when glibc refused a setting.
bool ApplyHeapPolicy(const HeapPolicy& policy);

}  // namespace dlaunch::worker
