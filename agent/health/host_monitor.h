// HostMonitor: the node's own health for every heartbeat (HostSample): load, memory available,
// memory pressure (PSI, where the kernel has it) and the free space of the job's directories.
// A few small /proc reads and statvfs calls; the parsers are pure and unit-tested.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/report.pb.h"

namespace dlaunch {

// /proc/loadavg's first figure; -1 if unreadable.
double ParseLoad1(const std::string& loadavg);
// MemTotal and MemAvailable of /proc/meminfo into `out`.
void ParseMeminfo(const std::string& meminfo, v1::HostSample* out);
// "some avg10" of /proc/pressure/memory; -1 if absent.
double ParseMemoryPressure(const std::string& pressure);

class HostMonitor {
 public:
  using ReadFn = std::function<absl::StatusOr<std::string>(const std::string&)>;
  // `disks`: the directories whose free space is reported (the job directory, /tmp).
  explicit HostMonitor(std::vector<std::string> disks);
  HostMonitor(std::vector<std::string> disks, ReadFn read);

  v1::HostSample Sample() const;

 private:
  std::vector<std::string> disks_;
  ReadFn read_;
};

}  // namespace dlaunch
