#include "agent/health/host_monitor.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"

namespace dlaunch {

double ParseLoad1(const std::string& loadavg) {
  std::vector<absl::string_view> parts = absl::StrSplit(loadavg, ' ', absl::SkipWhitespace());
  double v = 0;
  return !parts.empty() && absl::SimpleAtod(parts[0], &v) ? v : -1;
}

void ParseMeminfo(const std::string& meminfo, v1::HostSample* out) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    int64_t kb = 0;
    if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &kb)) continue;
    if (parts[0] == "MemTotal:") out->set_mem_total_kb(kb);
    if (parts[0] == "MemAvailable:") out->set_mem_available_kb(kb);
  }
}

double ParseMemoryPressure(const std::string& pressure) {
  for (absl::string_view line : absl::StrSplit(pressure, '\n', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&line, "some ")) continue;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipWhitespace())) {
      double v = 0;
      if (absl::ConsumePrefix(&field, "avg10=") && absl::SimpleAtod(field, &v)) return v;
    }
  }
  return -1;
}

HostMonitor::HostMonitor(std::vector<std::string> disks)
    : HostMonitor(std::move(disks), [](const std::string& p) { return ReadFile(p); }) {}

HostMonitor::HostMonitor(std::vector<std::string> disks, ReadFn read)
    : disks_(std::move(disks)), read_(std::move(read)) {}

v1::HostSample HostMonitor::Sample() const {
  v1::HostSample s;
  if (auto t = read_("/proc/loadavg"); t.ok()) s.set_load1(ParseLoad1(*t));
  s.set_cpus(static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  if (auto t = read_("/proc/meminfo"); t.ok()) ParseMeminfo(*t, &s);
  auto pressure = read_("/proc/pressure/memory");
  s.set_mem_pressure_pct(pressure.ok() ? ParseMemoryPressure(*pressure) : -1);
  for (const std::string& path : disks_) {
    struct statvfs fs;
    if (path.empty() || statvfs(path.c_str(), &fs) != 0) continue;
    v1::DiskSpace* d = s.add_disks();
    d->set_path(path);
    d->set_free_bytes(static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize));
    d->set_total_bytes(static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize));
  }
  return s;
}

}  // namespace dlaunch
