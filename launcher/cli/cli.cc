#include "launcher/cli/cli.h"

#include <iostream>
#include <string>
#include <vector>

#include "launcher/cli/run_command.h"
#include "launcher/cli/submit_commands.h"

namespace dlaunch {
namespace {

constexpr char kUsage[] =
    "dlaunch: launch and watch distributed training jobs\n"
    "\n"
    "usage: dlaunch <command> [args]\n"
    "  run [job.yaml] [options] [-- cmd args]  run a job now: in this allocation, or on this machine\n"
    "  validate job.yaml                        check a spec and print the resolved job\n"
    "  script job.yaml [--site NAME]            print the batch script (nothing submitted)\n"
    "  submit job.yaml [--site NAME]            write the batch script, submit it, print the job id\n"
    "  status [JOB]                             scheduler state and dlaunch events of a job\n"
    "  logs JOB [--rank N] [--follow]           per-rank logs of a job\n"
    "  cancel JOB                               stop a job (scheduler and launcher)\n"
    "  version                                  print the version\n"
    "\n"
    "`dlaunch run --help` lists the run options. Exit codes: 0 success, 1 job failed,\n"
    "2 bad usage or invalid job.yaml, 3 scheduler or launch error, 130 interrupted.\n";

}  // namespace

int RunCli(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "run") return RunRunCommand(args);
  if (cmd == "validate") return RunValidateCommand(args);
  if (cmd == "script") return RunScriptCommand(args);
  if (cmd == "submit") return RunSubmitCommand(args);
  if (cmd == "status") return RunStatusCommand(args);
  if (cmd == "logs") return RunLogsCommand(args);
  if (cmd == "cancel") return RunCancelCommand(args);
  if (cmd == "version" || cmd == "--version") {
    std::cout << "dlaunch 0.1.0\n";
    return 0;
  }
  if (cmd == "help" || cmd == "-h" || cmd == "--help") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "dlaunch: unknown command '" << cmd << "'\n\n" << kUsage;
  return 2;
}

}  // namespace dlaunch
