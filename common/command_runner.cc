#include "common/command_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/process.h"

namespace dlaunch {
namespace {

// Reads stdout and stderr until both close or the deadline passes. False on timeout.
bool DrainUntil(SpawnedProcess& child, std::chrono::steady_clock::time_point deadline,
                CommandResult* result) {
  struct pollfd fds[2] = {{child.stdout_fd, POLLIN, 0}, {child.stderr_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result->out, &result->err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    const int n = ::poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
      if (r > 0) {
        sinks[i]->append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  child.stdout_fd = child.stderr_fd = -1;
  return open_fds == 0;
}

}  // namespace

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, double timeout_s) {
  SpawnOptions options;
  options.argv = argv;
  // A scheduler command is short and belongs to this command line: it stays in our process
  // group (Ctrl-C reaches it) and outlives nothing.
  options.new_process_group = false;
  options.parent_death_signal = 0;
  return RunCommandWith(std::move(options), timeout_s);
}

absl::StatusOr<CommandResult> RunCommandWith(SpawnOptions options, double timeout_s) {
  options.capture_output = true;
  options.stdin_null = true;
  const std::vector<std::string> argv = options.argv;
  absl::StatusOr<PendingProcess> pending = ForkProcess(options);
  if (!pending.ok()) return pending.status();
  absl::StatusOr<SpawnedProcess> child = AwaitExec(*std::move(pending));
  if (!child.ok()) return absl::UnavailableError(child.status().message());

  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  CommandResult result;
  const bool finished = DrainUntil(*child, deadline, &result);
  if (!finished) ::kill(options.new_process_group ? -child->pid : child->pid, SIGKILL);
  int status = 0;
  WaitChild(child->pid, &status, 0);
  if (!finished) {
    return absl::DeadlineExceededError(absl::StrCat(absl::StrJoin(argv, " "),
                                                    " did not finish within ", timeout_s, " s"));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandRunner RealCommandRunner(double timeout_s) {
  return [timeout_s](const std::vector<std::string>& argv) { return RunCommand(argv, timeout_s); };
}

std::vector<std::string> DetachedArgv(const std::vector<std::string>& argv,
                                      const std::string& output_path) {
  // fd 3 keeps the pipe our caller reads the pid from. The job prints its own pid from inside
  // its new session, so the pid is reported only once a stop can reach the whole group, and
  // then closes fd 3: the caller sees end-of-file without waiting for the job to end.
  std::vector<std::string> out = {
      "/bin/sh", "-c",
      "out=$1; shift\n"
      "exec 3>&1 </dev/null >>\"$out\" 2>&1 || exit 126\n"
      "setsid /bin/sh -c 'echo $$ >&3; exec 3>&- \"$@\"' sh \"$@\" &\n",
      "sh", output_path};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

absl::StatusOr<pid_t> ParseDetachedPid(const CommandResult& result) {
  int pid = 0;
  if (result.exit_code != 0 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(result.out), &pid) ||
      pid <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "could not start the job in the background (exit ", result.exit_code, ")",
        result.err.empty() ? "" : ": ", absl::StripAsciiWhitespace(result.err)));
  }
  return static_cast<pid_t>(pid);
}

}  // namespace dlaunch
