// Test helpers: run a real command with its output captured to files, wait for it with a
// deadline, and find the processes of a job by scanning /proc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/testing/wait_for.h"

namespace dlaunch::testing {

// The one WaitFor of the tests (tests/testing/wait_for.h), under the name these helpers' users
// have always called it by.
using ::dlaunch::WaitFor;

class ChildProcess {
 public:
  // Starts argv (extra_env "K=V" added) with stdout/stderr going to files in `out_dir`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& out_dir,
               const std::vector<std::string>& extra_env = {});
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  // Exit code (128+signal when killed), or nullopt if still running at the deadline.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  void Signal(int sig) const;
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> code_;
  std::string out_path_, err_path_;
};

// Pids of live processes (not zombies) whose environment has `env_needle` ("K=V", "" = none) or whose
// command line contains `cmdline_part` (when non-empty).
std::vector<pid_t> FindProcesses(const std::string& env_needle, const std::string& cmdline_part);

std::string ReadFile(const std::string& path);

// The python of a PyTorch 2.x environment: $DLAUNCH_TORCH2_PYTHON (scripts/test-torch2.sh sets
// it), else the checkout's build-torch2/venv (scripts/torch-venv.sh makes it).
std::string Torch2Python();

// "" when `python` imports `module`, else why not, for a test's GTEST_SKIP. Runs in `dir`.
std::string WhyPythonCannotImport(const std::string& python, const std::string& module,
                                  const std::string& dir);
std::string MakeTempDir();

}  // namespace dlaunch::testing
