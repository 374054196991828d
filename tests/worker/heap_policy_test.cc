#include "worker/heap_policy.h"

#include <sys/resource.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/sanitizer.h"

namespace dlaunch::worker {
namespace {

TEST(HeapPolicyTest, KeepsFreedMemoryByDefault) {
  HeapPolicy p = ChooseHeapPolicy(MapEnvironment({{"OMP_NUM_THREADS", "1"}}));
  EXPECT_TRUE(p.keep_freed_memory);
  EXPECT_TRUE(p.why.empty());
}

TEST(HeapPolicyTest, TheUsersOwnAllocatorChoiceWins) {
  struct Case {
    std::string name, value, why;
  };
  for (const Case& c : std::vector<Case>{
           {"DLAUNCH_WORKER_HEAP", "system", "DLAUNCH_WORKER_HEAP=system"},
           {"MALLOC_MMAP_THRESHOLD_", "131072", "MALLOC_MMAP_THRESHOLD_ is set"},
           {"MALLOC_ARENA_MAX", "2", "MALLOC_ARENA_MAX is set"},
           {"GLIBC_TUNABLES", "glibc.malloc.trim_threshold=0", "GLIBC_TUNABLES sets malloc tunables"},
           {"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "LD_PRELOAD has jemalloc"},
       }) {
    HeapPolicy p = ChooseHeapPolicy(MapEnvironment({{c.name, c.value}}));
    EXPECT_FALSE(p.keep_freed_memory) << c.name;
    EXPECT_EQ(p.why, c.why);
  }
  // Unrelated values of the same variables change nothing.
  EXPECT_TRUE(ChooseHeapPolicy(MapEnvironment({{"GLIBC_TUNABLES", "glibc.cpu.x86_ibt=on"}}))
                  .keep_freed_memory);
  EXPECT_TRUE(ChooseHeapPolicy(MapEnvironment({{"LD_PRELOAD", "libfoo.so"}})).keep_freed_memory);
  EXPECT_TRUE(
      ChooseHeapPolicy(MapEnvironment({{"DLAUNCH_WORKER_HEAP", "keep"}})).keep_freed_memory);
}

long MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Writes one byte per page through a volatile pointer (a memset before free() is optimised
// away).
void TouchPages(char* p, size_t bytes) {
  volatile char* v = p;
  for (size_t i = 0; i < bytes; i += 4096) v[i] = 1;
}

TEST(HeapPolicyTest, AppliedAFreedBlockIsReusedWithoutFaultingItsPagesInAgain) {
#ifdef DLAUNCH_SANITIZER_MALLOC
  GTEST_SKIP() << "the sanitizer's allocator replaces glibc's malloc, which mallopt tunes";
#endif
  ASSERT_TRUE(ApplyHeapPolicy(ChooseHeapPolicy(MapEnvironment({}))));
  // A 48 MiB block (12288 pages), written, freed, asked for and written again: with glibc's
  // defaults the second one is a fresh mmap whose every page faults in again.
  constexpr size_t kBytes = 48 << 20;
  char* a = static_cast<char*>(malloc(kBytes));
  ASSERT_NE(a, nullptr);
  TouchPages(a, kBytes);
  free(a);
  const long before = MinorFaults();
  char* b = static_cast<char*>(malloc(kBytes));
  ASSERT_NE(b, nullptr);
  TouchPages(b, kBytes);
  const long faults = MinorFaults() - before;
  free(b);
  EXPECT_LT(faults, 1000) << "pages of the reused block faulted in again";
}

}  // namespace
}  // namespace dlaunch::worker
