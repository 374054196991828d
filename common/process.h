// Child-process primitives shared by the agent (workers) and the launcher (local agents):
// spawn into a new process group with PR_SET_PDEATHSIG, await the exec, describe an exit.
// Signalling and reaping go through ProcessLauncher (process_launcher.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/wait_status.h"  // DescribeWaitStatus, for the callers that reap

namespace dlaunch {

struct SpawnOptions {
  std::vector<std::string> argv;         // argv[0] is looked up on PATH when it has no '/'
  std::vector<std::string> envp;         // "K=V" entries; empty = inherit this process's environment
  std::string workdir;                   // "" = inherit
  bool new_process_group = true;         // the child leads its own group, so a stop reaches its children
  int parent_death_signal = 9;           // delivered when the spawning thread dies; 0 = none
  bool capture_output = true;            // stdout/stderr to pipes; else inherited
  bool stdin_null = true;
  std::vector<int> cpu_affinity;         // CPU ids for sched_setaffinity in the child; empty = inherit
  // An open cgroup.procs (cgroup v2): the child moves itself into that cgroup before it execs,
  // so nothing it starts runs outside it. -1 = stay in the parent's cgroup. A refused move is
  // not an error here: the caller checked that it may move processes there.
  int cgroup_procs_fd = -1;
  // The spawning process and its other children (the agent's py-spy and gdb) may ptrace the
  // child, also where Yama's ptrace_scope 1 allows it only to ancestors (PR_SET_PTRACER).
  bool traceable_by_parent = false;
};

struct SpawnedProcess {
  pid_t pid = -1;
  int stdout_fd = -1;                    // read ends (O_CLOEXEC, non-blocking), -1 when not captured
  int stderr_fd = -1;
};

// A forked child not yet known to have reached exec.
struct PendingProcess {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int exec_status_fd = -1;   // closes on exec; carries errno when exec (or chdir) failed
  std::string program;
  std::string workdir;
};

// Forks; the child sets itself up and execs. Finish with AwaitExec. Forking several children
// before awaiting any lets them start in parallel instead of one scheduling delay after another.
absl::StatusOr<PendingProcess> ForkProcess(const SpawnOptions& options);

// Waits until the child has exec'd. An exec (or chdir) failure is reported here as an error
// naming the program (or directory), with the code its errno calls for (NotFound for ENOENT,
// PermissionDenied for EACCES, ...), not as a child that exits 127.
absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess pending);

// waitpid(pid, status, flags) for a child ForkProcess made; once reaped it is forgotten by
// IsSpawnedChild. Returns what waitpid returns (EINTR is retried).
pid_t WaitChild(pid_t pid, int* status, int flags);

// True for a child ForkProcess made that is not reaped yet. A child subreaper (the agent) tells
// its own children from the orphans it adopted by this.
bool IsSpawnedChild(pid_t pid);

// `program` as execvp would find it on `path_var` (relative to `workdir` when it holds a '/'
// but does not start with one); "" when it is not there or not executable.
std::string FindProgram(const std::string& program, const std::string& path_var,
                        const std::string& workdir = "");

// Raises this process's open-file soft limit to its hard limit (a server holding a connection
// per agent or per rank needs more than the usual 1024); the soft limit it has afterwards,
// UINT64_MAX when unlimited or unknown.
uint64_t RaiseOpenFileLimit();

}  // namespace dlaunch
