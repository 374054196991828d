#include "common/process_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dlaunch {

absl::StatusOr<PendingProcess> SystemProcessLauncher::Fork(const SpawnOptions& options) {
  return ForkProcess(options);
}

absl::StatusOr<SpawnedProcess> SystemProcessLauncher::AwaitExec(PendingProcess pending) {
  return dlaunch::AwaitExec(std::move(pending));
}

bool SystemProcessLauncher::SignalGroup(pid_t pgid, int sig) {
  return pgid > 0 && kill(-pgid, sig) == 0;
}

bool SystemProcessLauncher::SignalChild(pid_t pid, int sig) {
  if (pid <= 0) return false;
  const pid_t group = getpgid(pid);
  return group >= 0 && group != pid && kill(pid, sig) == 0;
}

std::optional<int> SystemProcessLauncher::TryReap(pid_t pid) {
  int status = 0;
  if (WaitChild(pid, &status, WNOHANG) != pid) return std::nullopt;
  return status;
}

void SystemProcessLauncher::WatchExits(std::function<void()> on_exit) {
  on_exit_ = std::move(on_exit);
  Wait();
}

void SystemProcessLauncher::Wait() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    on_exit_();
    Wait();
  });
}

}  // namespace dlaunch
