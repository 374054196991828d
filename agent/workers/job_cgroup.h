// JobCgroup: the agent's workers in a cgroup v2 of their own, `dlaunch-<job>-<agent>` under the
// agent's cgroup, where the node allows one. Whatever they start stays in it, whichever process
// group, session or parent it ends up with, so at the end of a round (and as the agent exits)
// every process left in it is killed at once (cgroup.kill, or SIGKILL to each pid until it is
// empty): a daemon that forks away from each signal cannot outrun it as it can the subreaper's
// sweep (agent/workers/orphan_sweeper.h), which stays the first, gentler pass (SIGTERM, grace). The
// agent runs that kill as timer steps on its loop (KillTarget, common/escalation_driver.h);
// KillAll, and the destructor, block.
// Without a writable cgroup v2 the agent says why once and relies on the subreaper alone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/escalation_driver.h"

namespace dlaunch {

// The directory of this process's cgroup v2, from the texts of /proc/self/cgroup (its "0::/path"
// line) and /proc/self/mountinfo (the cgroup2 mounts: /sys/fs/cgroup, or /sys/fs/cgroup/unified
// on a hybrid v1+v2 node); FailedPrecondition saying what is missing.
absl::StatusOr<std::string> CgroupV2Dir(const std::string& proc_cgroup,
                                        const std::string& mountinfo);

// "dlaunch-<job>-<agent>" (no second "dlaunch-" when the job id has it) with every byte but
// [A-Za-z0-9._-] as '-', at most 200 bytes.
std::string JobCgroupName(const std::string& job_id, const std::string& agent_id);

// The pid of the agent that made a JobCgroupName cgroup, from its agent id's "<host>:<pid>:<hex>"
// (the name's last two '-' fields); nothing when the name is not one.
std::optional<pid_t> OwnerOfJobCgroup(const std::string& name);

// The pids of a cgroup.procs text.
std::vector<pid_t> ParseCgroupProcs(const std::string& text);

class JobCgroup {
 public:
  // Makes `<parent_dir>/<name>` and checks that a child can move itself into it; the error says
  // why not (no cgroup v2, not writable, the move refused). First removes the empty cgroups
  // there of agents that are gone (one killed by SIGKILL could not remove its own).
  static absl::StatusOr<std::unique_ptr<JobCgroup>> Create(const std::string& parent_dir,
                                                           const std::string& name);
  // The same under this process's own cgroup (CgroupV2Dir of /proc/self).
  static absl::StatusOr<std::unique_ptr<JobCgroup>> CreateForThisProcess(const std::string& name);
  // Kills what is left in it and removes it.
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  // Its cgroup.procs, open for writing: SpawnOptions::cgroup_procs_fd.
  int procs_fd() const { return procs_fd_; }
  // The live processes in it now.
  std::vector<pid_t> Pids() const;
  // SIGKILL to every process in it: cgroup.kill (Linux 5.14) kills the whole cgroup at once, a
  // process forking right then included; without it, each of `pids`.
  void Kill(const std::vector<pid_t>& pids) const;
  // Its processes as an escalation's target (with no grace: every signal is a Kill); "pid (comm)"
  // of each process it finds goes to `found`, which must outlive it.
  EscalationTarget KillTarget(std::vector<std::string>* found) const;
  // How long a kill waits for the cgroup to empty before it gives up.
  static constexpr std::chrono::milliseconds kKillLimit{5000};
  // Kills every process in it and waits (blocking), up to `limit`, until it is empty. Returns
  // "pid (comm)" of each process it found there.
  std::vector<std::string> KillAll(std::chrono::milliseconds limit = kKillLimit);
  // "killed 2 process(es) left in cgroup dlaunch-...: 41 (sleep), 42 (python3)".
  std::string DescribeKilled(const std::vector<std::string>& killed) const;

 private:
  JobCgroup(std::string dir, int procs_fd) : dir_(std::move(dir)), procs_fd_(procs_fd) {}
  // rmdir, retried while the kernel still counts exiting processes in it.
  bool Remove(std::chrono::milliseconds limit);

  std::string dir_;
  int procs_fd_ = -1;
};

}  // namespace dlaunch
