#include "worker/heap_policy.h"

#include <malloc.h>

#include <climits>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dlaunch::worker {

HeapPolicy ChooseHeapPolicy(const EnvLookup& env) {
  HeapPolicy p;
  if (std::optional<std::string> v = env("DLAUNCH_WORKER_HEAP")) {
    if (*v == "system") {
      p.why = "DLAUNCH_WORKER_HEAP=system";
      return p;
    }
  }
  for (const char* name : {"MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX"}) {
    if (env(name)) {
      p.why = absl::StrCat(name, " is set");
      return p;
    }
  }
  if (std::optional<std::string> t = env("GLIBC_TUNABLES"); t && absl::StrContains(*t, "malloc")) {
    p.why = "GLIBC_TUNABLES sets malloc tunables";
    return p;
  }
  if (std::optional<std::string> pre = env("LD_PRELOAD")) {
    for (const char* lib : {"jemalloc", "tcmalloc", "mimalloc"}) {
      if (absl::StrContains(*pre, lib)) {
        p.why = absl::StrCat("LD_PRELOAD has ", lib);
        return p;
      }
    }
  }
  p.keep_freed_memory = true;
  return p;
}

bool ApplyHeapPolicy(const HeapPolicy& policy) {
  if (!policy.keep_freed_memory) return true;
  // mallopt returns 1 on success.
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  const bool no_trim = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  return no_mmap && no_trim;
}

}  // namespace dlaunch::worker
