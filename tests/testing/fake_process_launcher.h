// FakeProcessLauncher: a ProcessLauncher that starts no process. Each "child" gets real pipes
// for its output (so the supervisor's asio reads work unchanged); the test writes to them,
// makes the child exit with a chosen wait status, and inspects the signals it was sent.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/process_launcher.h"

namespace dlaunch {

class FakeProcessLauncher : public ProcessLauncher {
 public:
  struct Signal {
    pid_t pgid;
    int sig;
    bool while_running;  // false: sent after the leader had exited
  };

  ~FakeProcessLauncher() override {
    for (auto& [pid, c] : children_) CloseOutput(pid);
  }

  // The next Fork (or AwaitExec) of `program` fails with `status`.
  void FailFork(const std::string& program, absl::Status status) { fork_errors_[program] = status; }
  void FailExec(const std::string& program, absl::Status status) { exec_errors_[program] = status; }

  absl::StatusOr<PendingProcess> Fork(const SpawnOptions& options) override {
    if (auto it = fork_errors_.find(options.argv.at(0)); it != fork_errors_.end()) return it->second;
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return absl::InternalError("pipe");
    pid_t pid = next_pid_++;
    children_[pid] = Child{options, out[1], err[1]};
    PendingProcess p;
    p.pid = pid;
    p.stdout_fd = out[0];
    p.stderr_fd = err[0];
    p.program = options.argv[0];
    return p;
  }

  absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess p) override {
    if (auto it = exec_errors_.find(p.program); it != exec_errors_.end()) {
      close(p.stdout_fd);
      close(p.stderr_fd);
      CloseOutput(p.pid);
      children_.erase(p.pid);
      return it->second;
    }
    for (int fd : {p.stdout_fd, p.stderr_fd}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return SpawnedProcess{p.pid, p.stdout_fd, p.stderr_fd};
  }

  bool SignalGroup(pid_t pgid, int sig) override {
    auto it = children_.find(pgid);
    signals_.push_back({pgid, sig, it != children_.end() && !it->second.exited});
    return it != children_.end();
  }

  // Kept apart from the group signals: the supervisor sends both, and the tests count the
  // group's.
  bool SignalChild(pid_t pid, int sig) override {
    auto it = children_.find(pid);
    child_signals_.push_back({pid, sig, it != children_.end() && !it->second.exited});
    return it != children_.end() && !it->second.reaped;
  }

  std::optional<int> TryReap(pid_t pid) override {
    auto it = children_.find(pid);
    if (it == children_.end() || !it->second.exited || it->second.reaped) return std::nullopt;
    it->second.reaped = true;
    return it->second.wait_status;
  }

  void WatchExits(std::function<void()> on_exit) override { on_exit_ = std::move(on_exit); }

  // Test controls. -----------------------------------------------------------------------------
  void Write(pid_t pid, const std::string& text, bool to_stderr = false) {
    const Child& c = children_.at(pid);
    (void)!write(to_stderr ? c.err_w : c.out_w, text.data(), text.size());
  }
  // Closes the child's end of its pipes (what exiting does, unless a grandchild holds them).
  void CloseOutput(pid_t pid) {
    Child& c = children_.at(pid);
    for (int* fd : {&c.out_w, &c.err_w}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
  // The child exits with `wait_status` and the exit watch fires, as SIGCHLD would.
  void Exit(pid_t pid, int wait_status, bool close_output = true) {
    Child& c = children_.at(pid);
    c.exited = true;
    c.wait_status = wait_status;
    if (close_output) CloseOutput(pid);
    if (on_exit_) on_exit_();
  }

  const SpawnOptions& options(pid_t pid) const { return children_.at(pid).options; }
  bool started(pid_t pid) const { return children_.count(pid) > 0; }
  const std::vector<Signal>& signals() const { return signals_; }
  const std::vector<Signal>& child_signals() const { return child_signals_; }
  // Signals `sig` sent to `pid`'s group while it was running.
  int SignalsWhileRunning(pid_t pid, int sig) const {
    int n = 0;
    for (const Signal& s : signals_) n += s.pgid == pid && s.sig == sig && s.while_running;
    return n;
  }

 private:
  struct Child {
    SpawnOptions options;
    int out_w = -1;
    int err_w = -1;
    bool exited = false;
    bool reaped = false;
    int wait_status = 0;
  };

  pid_t next_pid_ = 1000;
  std::map<pid_t, Child> children_;
  std::map<std::string, absl::Status> fork_errors_, exec_errors_;
  std::vector<Signal> signals_;
  std::vector<Signal> child_signals_;  // SignalChild's, `pgid` being the pid
  std::function<void()> on_exit_;
};

}  // namespace dlaunch
