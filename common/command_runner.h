// Running short external programs to completion (qsub, squeue, scancel, ...) and starting jobs
// detached in the background: the one fork/exec path for commands, on top of process.h.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/process.h"

namespace dlaunch {

struct CommandResult {
  int exit_code = 0;  // 128+signal when killed
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up on PATH) with stdin on /dev/null and collects its output.
// Unavailable when the program cannot be started; DeadlineExceeded when it is still running
// after `timeout_s` (it is then killed).
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv, double timeout_s);
// The same with the environment, working directory and process group `options` give (its
// capture_output and stdin_null are set here). A new process group is killed whole at the
// deadline.
absl::StatusOr<CommandResult> RunCommandWith(SpawnOptions options, double timeout_s);

// RunCommand behind a function type, so the code that decides what to run is tested with
// recorded output instead of real programs.
using CommandRunner =
    std::function<absl::StatusOr<CommandResult>(const std::vector<std::string>& argv)>;
CommandRunner RealCommandRunner(double timeout_s = 120);

// The command that starts `argv` detached and prints its pid: a short-lived /bin/sh starts it in
// the background and exits, so the job is reparented away from the caller (no zombie to mistake
// for a live job) and, through setsid(1), leads its own session and process group (a stop can
// signal the whole group). Its stdin is /dev/null; stdout and stderr are appended to
// `output_path`. Run it with a CommandRunner and read the pid with ParseDetachedPid.
std::vector<std::string> DetachedArgv(const std::vector<std::string>& argv,
                                      const std::string& output_path);

// The pid DetachedArgv's command printed; Unavailable (with what the shell said) otherwise.
absl::StatusOr<pid_t> ParseDetachedPid(const CommandResult& result);

}  // namespace dlaunch
