// ProcessLauncher: the system calls ChildSupervisor makes on its children (fork/exec into a
// new process group, signal a group, reap), behind an interface so that tests substitute a
// fake that starts no process and "exits" children on command.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>

#include <boost/asio.hpp>

#include "absl/status/statusor.h"
#include "common/process.h"

namespace dlaunch {

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // ForkProcess and AwaitExec (common/process.h): fork every child first, then await each.
  virtual absl::StatusOr<PendingProcess> Fork(const SpawnOptions& options) = 0;
  virtual absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess pending) = 0;
  // Sends `sig` to the process group `pgid` (only the group: after its leader was reaped, the
  // pid may belong to someone else). False when the group no longer exists.
  virtual bool SignalGroup(pid_t pgid, int sig) = 0;
  // Sends `sig` to the child `pid` itself if it has left its own process group (setpgid to
  // another group of its session), where SignalGroup misses it; one still in its group got that
  // signal and gets no second (srun and mpiexec count repeated signals). `pid` must not be reaped
  // yet, so it is still the child's. False when no signal was sent.
  virtual bool SignalChild(pid_t pid, int sig) = 0;
  // Reaps `pid` if it has exited and returns its wait status; nullopt while it still runs.
  virtual std::optional<int> TryReap(pid_t pid) = 0;
  // Calls `on_exit` on the event loop's thread whenever a child may have exited.
  virtual void WatchExits(std::function<void()> on_exit) = 0;
};

// The real one: common/process.h, kill(2), waitpid(WNOHANG) and SIGCHLD on `io`.
class SystemProcessLauncher : public ProcessLauncher {
 public:
  explicit SystemProcessLauncher(boost::asio::io_context& io) : sigchld_(io, SIGCHLD) {}

  absl::StatusOr<PendingProcess> Fork(const SpawnOptions& options) override;
  absl::StatusOr<SpawnedProcess> AwaitExec(PendingProcess pending) override;
  bool SignalGroup(pid_t pgid, int sig) override;
  bool SignalChild(pid_t pid, int sig) override;
  std::optional<int> TryReap(pid_t pid) override;
  void WatchExits(std::function<void()> on_exit) override;

 private:
  void Wait();

  boost::asio::signal_set sigchld_;
  std::function<void()> on_exit_;
};

}  // namespace dlaunch
