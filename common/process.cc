#include "common/process.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/child_setup.h"
#include "common/file_io.h"

extern char** environ;

namespace dlaunch {
namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

bool MakePipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

void CloseAll(std::initializer_list<int*> fds) {
  for (int* fd : fds) CloseIfOpen(*fd);
}

// Everything the child needs, built before fork: after fork only async-signal-safe calls.
struct ExecPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  char** env = nullptr;
  size_t affinity_size = 0;
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> affinity{nullptr, [](cpu_set_t* s) {
                                                               if (s) CPU_FREE(s);
                                                             }};
};

void PrepareExec(const SpawnOptions& options, ExecPlan* plan) {
  for (const auto& a : options.argv) plan->argv.push_back(const_cast<char*>(a.c_str()));
  plan->argv.push_back(nullptr);
  for (const auto& e : options.envp) plan->envp.push_back(const_cast<char*>(e.c_str()));
  plan->envp.push_back(nullptr);
  plan->env = options.envp.empty() ? environ : plan->envp.data();
  int max_cpu = -1;
  for (int cpu : options.cpu_affinity) max_cpu = std::max(max_cpu, cpu);
  if (max_cpu < 0) return;
  plan->affinity_size = CPU_ALLOC_SIZE(max_cpu + 1);
  plan->affinity.reset(CPU_ALLOC(max_cpu + 1));
  CPU_ZERO_S(plan->affinity_size, plan->affinity.get());
  for (int cpu : options.cpu_affinity) {
    if (cpu >= 0) CPU_SET_S(cpu, plan->affinity_size, plan->affinity.get());
  }
}

// The child's failure report on the exec-status pipe: what failed ('a'ffinity, 'c'hdir,
// 'e'xec) and its errno; the parent's AwaitExec turns it into a status.
[[noreturn]] void FailInChild(int status_fd, char what) {
  int code = errno;
  (void)!write(status_fd, &what, 1);
  (void)!write(status_fd, &code, sizeof(code));
  _exit(127);
}

// In the forked child: become what `options` asks for, then exec. Never returns.
[[noreturn]] void RunChild(const SpawnOptions& options, const ExecPlan& plan, pid_t parent,
                           int out_fd, int err_fd, int status_fd) {
  if (options.new_process_group) setpgid(0, 0);
  // "0" is the writing process; done before exec, so no child of the worker escapes it.
  if (options.cgroup_procs_fd >= 0) (void)!write(options.cgroup_procs_fd, "0", 1);
  if (!TieChildToParent(parent, options.parent_death_signal, options.traceable_by_parent)) {
    _exit(127);
  }
  if (options.stdin_null) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
  }
  if (options.capture_output) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
  }
  if (plan.affinity && sched_setaffinity(0, plan.affinity_size, plan.affinity.get()) != 0) {
    FailInChild(status_fd, 'a');
  }
  if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0) FailInChild(status_fd, 'c');
  execvpe(plan.argv[0], plan.argv.data(), plan.env);
  FailInChild(status_fd, 'e');
}

std::mutex& SpawnedMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::unordered_set<pid_t>& Spawned() {
  static auto* pids = new std::unordered_set<pid_t>;
  return *pids;
}

}  // namespace

std::string FindProgram(const std::string& program, const std::string& path_var,
                        const std::string& workdir) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    std::string p = program[0] == '/' || workdir.empty() ? program : workdir + "/" + program;
    return executable(p) ? p : "";
  }
  for (absl::string_view dir : absl::StrSplit(path_var, ':')) {
    std::string p = absl::StrCat(dir.empty() ? "." : dir, "/", program);
    if (executable(p)) return p;
  }
  return "";
}

pid_t WaitChild(pid_t pid, int* status, int flags) {
  pid_t r;
  do r = waitpid(pid, status, flags); while (r < 0 && errno == EINTR);
  if (r == pid) {
    std::lock_guard<std::mutex> lock(SpawnedMutex());
    Spawned().erase(pid);
  }
  return r;
}

bool IsSpawnedChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(SpawnedMutex());
  return Spawned().count(pid) > 0;
}

void RecordSpawnedChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(SpawnedMutex());
  Spawned().insert(pid);
}

absl::StatusOr<PendingProcess> ForkProcess(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("empty command");
  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
  if ((options.capture_output && (!MakePipe(out) || !MakePipe(err))) || !MakePipe(exec_err)) {
    int e = errno;
    CloseAll({&out[0], &out[1], &err[0], &err[1], &exec_err[0], &exec_err[1]});
    return absl::InternalError(absl::StrCat("pipe: ", strerror(e)));
  }
  ExecPlan plan;
  PrepareExec(options, &plan);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    CloseAll({&out[0], &out[1], &err[0], &err[1], &exec_err[0], &exec_err[1]});
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", strerror(e)));
  }
  if (pid == 0) RunChild(options, plan, parent, out[1], err[1], exec_err[1]);
  {
    std::lock_guard<std::mutex> lock(SpawnedMutex());
    Spawned().insert(pid);
  }
  if (options.new_process_group) setpgid(pid, pid);  // also in the parent: no race with a signal
  CloseAll({&out[1], &err[1], &exec_err[1]});
  PendingProcess p;
  p.pid = pid;
  p.stdout_fd = out[0];
  p.stderr_fd = err[0];
  p.exec_status_fd = exec_err[0];
  p.program = options.argv[0];
  p.workdir = options.workdir;
  return p;
}

absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess p) {
  char what = 0;
  int code = 0;
  ssize_t n;
  do n = read(p.exec_status_fd, &what, 1); while (n < 0 && errno == EINTR);
  if (n == 1) {
    (void)!read(p.exec_status_fd, &code, sizeof(code));
    CloseIfOpen(p.exec_status_fd);
    CloseIfOpen(p.stdout_fd);
    CloseIfOpen(p.stderr_fd);
    int st;
    WaitChild(p.pid, &st, 0);
    if (what == 'a') {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot set CPU affinity of '", p.program, "': ", strerror(code)));
    }
    if (what == 'c') {
      return absl::Status(ErrnoToStatusCode(code), absl::StrCat("cannot enter working directory '",
                                                                p.workdir, "': ", strerror(code)));
    }
    return absl::Status(ErrnoToStatusCode(code),
                        absl::StrCat("cannot execute '", p.program, "': ", strerror(code)));
  }
  CloseIfOpen(p.exec_status_fd);
  for (int fd : {p.stdout_fd, p.stderr_fd}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return SpawnedProcess{p.pid, p.stdout_fd, p.stderr_fd};
}

uint64_t RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return UINT64_MAX;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) getrlimit(RLIMIT_NOFILE, &lim);
  }
  return lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(lim.rlim_cur);
}

}  // namespace dlaunch
