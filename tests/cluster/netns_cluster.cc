#include "netns_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

extern char** environ;

namespace dlaunch {
namespace testing {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// environ with `env` applied, as owned strings (built before fork: the child may only
// make async-signal-safe calls).
std::vector<std::string> MergedEnvironment(const EnvOverrides& env) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (env.count(name) == 0) out.push_back(entry);
  }
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CPointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Forks argv in its own process group with stdout+stderr on `out_fd`. -1 on failure.
pid_t ForkExec(std::vector<std::string> argv, const EnvOverrides& env, int out_fd) {
  std::vector<std::string> envs = MergedEnvironment(env);
  std::vector<char*> c_argv = CPointers(argv);
  std::vector<char*> c_env = CPointers(envs);
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  execve(c_argv[0], c_argv.data(), c_env.data());
  const char msg[] = "netns_cluster: exec failed\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(127);
}

// Reads what is available on a non-blocking fd into `out`; false at EOF.
bool Drain(int fd, std::string* out) {
  char buf[8192];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return errno == EINTR || errno == EAGAIN;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

RunResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout,
                     const EnvOverrides& env) {
  RunResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    result.output = absl::StrCat("pipe: ", strerror(errno));
    return result;
  }
  pid_t pid = ForkExec(argv, env, fds[1]);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    result.output = absl::StrCat("fork: ", strerror(errno));
    return result;
  }
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  absl::Time deadline = absl::Now() + timeout;
  bool open_pipe = true;
  int status = 0;
  // The command's end is its exit, not EOF: a daemon it started may hold the pipe forever.
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (absl::Now() >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    if (open_pipe) {
      struct pollfd p = {fds[0], POLLIN, 0};
      poll(&p, 1, 20);
      open_pipe = Drain(fds[0], &result.output);
    } else {
      usleep(10000);
    }
  }
  if (open_pipe) Drain(fds[0], &result.output);
  close(fds[0]);
  result.exit_code = result.timed_out ? -1 : DecodeWaitStatus(status);
  return result;
}

std::string NetnsCluster::ToolPath() {
  return std::string(DLAUNCH_SOURCE_DIR) + "/tests/cluster/netns-cluster";
}

std::string NetnsCluster::UnavailableReason() {
  const std::string base = "cluster tests need root (netns, slurmd)";
  if (geteuid() != 0) return base + ": running as uid " + std::to_string(geteuid());
  RunResult ip = RunCommand({"/bin/sh", "-c", "ip netns list"}, absl::Seconds(10));
  if (!ip.ok()) return base + ": `ip netns list` failed: " + ip.output;
  for (const char* tool : {"/usr/bin/nsenter", "/usr/bin/unshare"}) {
    if (access(tool, X_OK) != 0) return base + ": " + tool + " is missing (util-linux)";
  }
  return "";
}

NetnsCluster::NetnsCluster(std::string dir, int nhosts) : dir_(std::move(dir)) {
  for (int i = 1; i <= nhosts; ++i) hosts_.push_back(absl::StrCat("h", i));
}

absl::StatusOr<std::unique_ptr<NetnsCluster>> NetnsCluster::Start(int nhosts) {
  if (nhosts < 1) return absl::InvalidArgumentError("a cluster needs at least one host");
  // Clusters left by test processes that were killed (ctest timeout, crash) go first.
  RunCommand({ToolPath(), "reap"}, absl::Seconds(60), {{"NETNS_CLUSTER_BASE", "/tmp"}});

  char tmpl[] = "/tmp/dlaunch-cluster.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", strerror(errno)));
  }
  chmod(tmpl, 0755);
  std::unique_ptr<NetnsCluster> cluster(new NetnsCluster(tmpl, nhosts));
  RunResult up = cluster->Tool({"up", std::to_string(nhosts)}, absl::Seconds(60));
  if (!up.ok()) {
    cluster->Stop();
    return absl::UnavailableError(absl::StrCat("netns-cluster up ", nhosts, " failed (exit ",
                                               up.exit_code, "): ", up.output));
  }
  if (absl::Status s = cluster->LoadState(); !s.ok()) {
    cluster->Stop();
    return s;
  }
  return cluster;
}

absl::Status NetnsCluster::LoadState() {
  std::istringstream in(ReadFile(dir_ + "/cluster.env"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "PFX=")) prefix_ = line.substr(4);
    if (absl::StartsWith(line, "NET=")) net_ = line.substr(4);
  }
  if (prefix_.empty() || net_.empty()) {
    return absl::DataLossError(absl::StrCat(dir_, "/cluster.env lacks PFX or NET"));
  }
  return absl::OkStatus();
}

NetnsCluster::~NetnsCluster() { Stop(); }

RunResult NetnsCluster::Tool(const std::vector<std::string>& args, absl::Duration timeout) {
  std::vector<std::string> argv = {ToolPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout,
                    {{"NETNS_CLUSTER_DIR", dir_},
                     {"NETNS_CLUSTER_OWNER", std::to_string(getpid())}});
}

RunResult NetnsCluster::RunOn(const std::string& host, const std::string& command,
                              absl::Duration timeout, const EnvOverrides& env) {
  EnvOverrides all = env;
  all["NETNS_CLUSTER_DIR"] = dir_;
  return RunCommand({ToolPath(), "run", host, "/bin/sh", "-c", command}, timeout, all);
}

pid_t NetnsCluster::SpawnOn(const std::string& host, const std::string& command,
                            const std::string& log_path, const EnvOverrides& env) {
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  EnvOverrides all = env;
  all["NETNS_CLUSTER_DIR"] = dir_;
  // netns-cluster run execs through nsenter and unshare, so this PID becomes the shell's.
  pid_t pid = ForkExec({ToolPath(), "run", host, "/bin/sh", "-c", command}, all, fd);
  close(fd);
  if (pid > 0) spawned_.push_back(pid);
  return pid;
}

absl::StatusOr<int> NetnsCluster::WaitSpawned(pid_t pid, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return DecodeWaitStatus(status);
    if (done < 0) return absl::NotFoundError(absl::StrCat("pid ", pid, ": ", strerror(errno)));
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("pid ", pid, " still running"));
    }
    usleep(10000);
  }
}

absl::Status NetnsCluster::CutLink(const std::string& host) {
  RunResult r = Tool({"cut", host}, absl::Seconds(10));
  if (!r.ok()) return absl::InternalError(absl::StrCat("cut ", host, ": ", r.output));
  return absl::OkStatus();
}

absl::Status NetnsCluster::HealLink(const std::string& host) {
  RunResult r = Tool({"heal", host}, absl::Seconds(10));
  if (!r.ok()) return absl::InternalError(absl::StrCat("heal ", host, ": ", r.output));
  return absl::OkStatus();
}

absl::Status NetnsCluster::StartSlurm(int gpus_per_node) {
  for (const char* daemon : {"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd"}) {
    if (access(daemon, X_OK) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(daemon, " is missing (scripts/install-deps.sh cluster)"));
    }
  }
  RunResult r = Tool({"slurm-up", std::to_string(gpus_per_node)}, absl::Seconds(90));
  if (!r.ok()) {
    return absl::UnavailableError(absl::StrCat("netns-cluster slurm-up failed (exit ",
                                               r.exit_code, "): ", r.output));
  }
  return absl::OkStatus();
}

std::string NetnsCluster::HostIp(const std::string& host) const {
  if (host == "head") return net_ + ".10";
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (hosts_[i] == host) return absl::StrCat(net_, ".", 11 + i);
  }
  return "";
}

void NetnsCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (pid_t pid : spawned_) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  spawned_.clear();
  RunResult down = Tool({"down", "quiet"}, absl::Seconds(60));
  if (!down.ok()) {
    std::cerr << "netns-cluster down failed for " << dir_ << " (exit " << down.exit_code
              << "): " << down.output << "\n";
    return;
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "netns cluster run directory kept for inspection: " << dir_ << "\n";
    return;
  }
  RunCommand({"/bin/rm", "-rf", dir_}, absl::Seconds(60));
}

}  // namespace testing
}  // namespace dlaunch
