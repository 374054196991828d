// A stand-in for NVIDIA's libnvidia-ml.so.1, for process tests of what the agent reads through
// NVML (docs/stragglers.md, the "gpu clock"): a test puts its folder first on LD_LIBRARY_PATH and
// the agent's dlopen finds it. Every index is a GPU, busy at 95% with its SM clock at 1980 MHz of
// 1980 MHz. With FAKE_NVML_SLOW_MHZ set, the first dlaunch-agent process to read a clock claims
// the file FAKE_NVML_CLAIM/slow-agent (writing its pid there), and its GPUs run at that many MHz,
// held down by heat (reasons 0x48: HW slowdown, HW thermal). Only the clock event reasons' older
// name is exported, as drivers before nvmlDeviceGetCurrentClocksEventReasons have it.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int devices[64];

bool IsAgent() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  const std::string path(exe, static_cast<size_t>(n));
  return path.size() >= 13 && path.compare(path.size() - 13, 13, "dlaunch-agent") == 0;
}

// This process's GPUs' clock: the slow one's when it claimed the file, else the most.
unsigned int ClockMhz() {
  static const unsigned int mhz = [] {
    const char* slow = std::getenv("FAKE_NVML_SLOW_MHZ");
    const char* dir = std::getenv("FAKE_NVML_CLAIM");
    if (slow == nullptr || dir == nullptr || !IsAgent()) return 1980u;
    const std::string file = std::string(dir) + "/slow-agent";
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 1980u;
    const std::string pid = std::to_string(getpid()) + "\n";
    const bool written = write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
    close(fd);
    return written ? static_cast<unsigned int>(std::atoi(slow)) : 1980u;
  }();
  return mhz;
}

}  // namespace

extern "C" {

struct FakeUtilization {
  unsigned int gpu, memory;
};
struct FakeMemory {
  unsigned long long total, free, used;
};

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake NVML error"; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** device) {
  if (i >= 64) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &devices[i];
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char*, void**) { return 6; }  // NVML_ERROR_NOT_FOUND
int nvmlDeviceGetUtilizationRates(void*, FakeUtilization* u) {
  u->gpu = 95;
  u->memory = 40;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void*, FakeMemory* m) {
  m->total = 80ull << 30;
  m->used = 20ull << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned int* mhz) {
  if (type != 1) return 3;  // only NVML_CLOCK_SM; NVML_ERROR_NOT_SUPPORTED
  *mhz = ClockMhz();
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void*, int type, unsigned int* mhz) {
  if (type != 1) return 3;
  *mhz = 1980;
  return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(void*, unsigned long long* reasons) {
  *reasons = ClockMhz() < 1980 ? 0x48 : 0;
  return 0;
}

}  // extern "C"
