#include "common/process.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"

extern char** environ;

namespace dlaunch {
namespace {

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

bool MakePipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

}  // namespace

absl::StatusOr<PendingProcess> ForkProcess(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("empty command");
  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
  if ((options.capture_output && (!MakePipe(out) || !MakePipe(err))) || !MakePipe(exec_err)) {
    int e = errno;
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &exec_err[0], &exec_err[1]}) CloseIfOpen(*fd);
    return absl::InternalError(absl::StrCat("pipe: ", strerror(e)));
  }

  // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.envp) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char** child_env = options.envp.empty() ? environ : envp.data();
  const pid_t parent = getpid();
  int max_cpu = -1;
  for (int cpu : options.cpu_affinity) max_cpu = std::max(max_cpu, cpu);
  const size_t affinity_size = CPU_ALLOC_SIZE(max_cpu + 1);
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> affinity(
      max_cpu >= 0 ? CPU_ALLOC(max_cpu + 1) : nullptr, [](cpu_set_t* s) { CPU_FREE(s); });
  if (affinity) {
    CPU_ZERO_S(affinity_size, affinity.get());
    for (int cpu : options.cpu_affinity) {
      if (cpu >= 0) CPU_SET_S(cpu, affinity_size, affinity.get());
    }
  }

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &exec_err[0], &exec_err[1]}) CloseIfOpen(*fd);
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", strerror(e)));
  }
  if (pid == 0) {
    if (options.new_process_group) setpgid(0, 0);
    if (options.parent_death_signal != 0) {
      prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    }
    // Reset what the parent may have blocked or ignored (asio blocks signals in some threads).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP, SIGQUIT}) signal(s, SIG_DFL);
    if (options.stdin_null) {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
    }
    if (options.capture_output) {
      dup2(out[1], 1);
      dup2(err[1], 2);
    }
    int code = 0;
    if (affinity && sched_setaffinity(0, affinity_size, affinity.get()) != 0) {
      code = errno;
      (void)!write(exec_err[1], "a", 1);
      (void)!write(exec_err[1], &code, sizeof(code));
      _exit(127);
    }
    if (!options.workdir.empty() && chdir(options.workdir.c_str()) != 0) {
      code = errno;
      (void)!write(exec_err[1], "c", 1);
      (void)!write(exec_err[1], &code, sizeof(code));
      _exit(127);
    }
    execvpe(argv[0], argv.data(), child_env);
    code = errno;
    (void)!write(exec_err[1], "e", 1);
    (void)!write(exec_err[1], &code, sizeof(code));
    _exit(127);
  }
  if (options.new_process_group) setpgid(pid, pid);  // also in the parent: no race with a signal
  CloseIfOpen(out[1]);
  CloseIfOpen(err[1]);
  CloseIfOpen(exec_err[1]);
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
    waitpid(p.pid, &st, 0);
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

std::string DescribeWaitStatus(int st) {
  if (WIFEXITED(st)) return absl::StrCat("exit code ", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    const char* name = strsignal(WTERMSIG(st));
    return absl::StrCat("signal ", WTERMSIG(st), " (", name ? name : "?", ")");
  }
  return absl::StrCat("wait status ", st);
}

}  // namespace dlaunch
