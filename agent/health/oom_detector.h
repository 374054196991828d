// Out of memory, named: whether the kernel's OOM killer ended a worker, and the memory figures
// that explain it. A worker killed by SIGKILL is looked up two ways:
//   - its memory cgroup's OOM-kill counter (cgroup v2 memory.events, v1 memory.oom_control),
//     read when the worker started and again when it died: the way a Slurm or PBS job's limit
//     shows, readable by the job's own user;
//   - the kernel log (/dev/kmsg), "Killed process <pid>", where it is readable (root, or
//     kernel.dmesg_restrict=0): the node-wide OOM killer, and proof of which process it took.
// The parsers are pure; the file reads go through a seam so they are unit-tested.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace dlaunch {

struct MemoryCgroup {
  std::string dir;   // e.g. /sys/fs/cgroup/memory/slurm/uid_1/job_7 or /sys/fs/cgroup/job.slice
  bool v2 = false;
};

// The memory cgroup a /proc/<pid>/cgroup text names (v1 "N:...memory...:/path" first, else the
// v2 "0::/path"), as a directory under `root` (normally /sys/fs/cgroup); `v2_dir_exists` tells
// which v2 mount holds it (/sys/fs/cgroup itself or its "unified" folder).
std::optional<MemoryCgroup> ParseMemoryCgroup(const std::string& proc_cgroup, const std::string& root,
                                              const std::function<bool(const std::string&)>& exists);

// The "oom_kill N" count of a v1 memory.oom_control or a v2 memory.events text; -1 if absent.
int64_t ParseOomKillCount(const std::string& text);

// A kernel log line of the OOM killer taking `pid`, from /dev/kmsg records
// ("6,1234,5678,-;Memory cgroup out of memory: Killed process 651 (python3) total-vm:..."):
// the message part of the last such record, or nothing.
std::optional<std::string> FindOomKillRecord(const std::string& kmsg, pid_t pid);

class OomDetector {
 public:
  using ReadFn = std::function<absl::StatusOr<std::string>(const std::string&)>;
  // The real files: /proc, /sys/fs/cgroup, /dev/kmsg.
  OomDetector();
  OomDetector(ReadFn read, std::function<bool(const std::string&)> exists, std::string cgroup_root);

  // A worker started: its cgroup and that cgroup's OOM-kill count now.
  void OnStarted(pid_t pid);
  // A worker died of SIGKILL: the reason when the OOM killer took it ("out of memory (cgroup
  // limit 64.0 MiB, peak 64.0 MiB; node: 1.2 of 7.8 GiB available)"), else nothing. Forgets pid.
  std::optional<std::string> OnKilled(pid_t pid);
  // A worker ended otherwise: forget it.
  void Forget(pid_t pid);

 private:
  struct Watched {
    std::optional<MemoryCgroup> cgroup;
    int64_t oom_kills = -1;
  };
  int64_t CountOf(const MemoryCgroup& cg) const;
  std::string Figures(const std::optional<MemoryCgroup>& cg) const;

  ReadFn read_;
  std::function<bool(const std::string&)> exists_;
  std::string cgroup_root_;
  std::map<pid_t, Watched> watched_;
};

}  // namespace dlaunch
