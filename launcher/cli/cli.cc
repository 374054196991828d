#include "launcher/cli/cli.h"

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "launcher/cli/job_commands.h"
#include "launcher/cli/run_command.h"
#include "launcher/cli/scale_command.h"
#include "launcher/cli/submit_command.h"
#include "launcher/cli/trace_command.h"
#include "launcher/cli/watch_command.h"

namespace dlaunch {
namespace {

constexpr char kUsage[] =
    "dlaunch: launch and watch distributed training jobs\n"
    "\n"
    "usage: dlaunch <command> [args]\n"
    "  run [job.yaml] [options] [-- cmd args]  run a job now: in this allocation, or on this machine\n"
    "  scale job.yaml [--nodes L] [--procs L]  scaling study: runs at each size, table, plots\n"
    "  validate job.yaml                        check a spec and print the resolved job\n"
    "  doctor [job.yaml] [options]              check every node of the job (preflight), as a table\n"
    "  script job.yaml [--site NAME]            print the batch script (nothing submitted)\n"
    "  submit job.yaml [--site NAME]            write the batch script, submit it, print the job id\n"
    "  status [JOB]                             scheduler state and dlaunch events of a job\n"
    "  watch JOB                                live table of a running job, from any host\n"
    "  logs JOB [--rank N] [--follow]           per-rank logs of a job\n"
    "  cancel JOB                               stop a job (scheduler and launcher)\n"
    "  trace JOB [--rebuild]                    the job's timeline (trace.json) and time per rank\n"
    "  version                                  print the version\n"
    "\n"
    "`dlaunch run --help` lists the run options. Exit codes: 0 success, 1 job failed,\n"
    "2 bad usage or invalid job.yaml, 3 scheduler or launch error, 130 interrupted.\n";

using Command = std::function<int(const std::vector<std::string>& args)>;

int PrintVersion(const std::vector<std::string>&) {
  std::cout << "dlaunch 0.1.0\n";
  return kExitOk;
}

int PrintUsage(const std::vector<std::string>&) {
  std::cout << kUsage;
  return kExitOk;
}

// Every command, under each of its names.
struct CommandEntry {
  std::vector<std::string> names;
  Command run;
};

const std::vector<CommandEntry>& Commands() {
  static const auto* commands = new std::vector<CommandEntry>{
      {{"run"}, RunRunCommand},
      {{"scale"}, RunScaleCommand},
      {{"validate"}, RunValidateCommand},
      {{"doctor"}, RunDoctorCommand},
      {{"script"}, RunScriptCommand},
      {{"submit"}, RunSubmitCommand},
      {{"status"}, RunStatusCommand},
      {{"watch"}, RunWatchCommand},
      {{"logs"}, RunLogsCommand},
      {{"cancel"}, RunCancelCommand},
      {{"trace"}, RunTraceCommand},
      {{"version", "--version"}, PrintVersion},
      {{"help", "-h", "--help"}, PrintUsage},
  };
  return *commands;
}

}  // namespace

int RunCli(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const CommandEntry& entry : Commands()) {
    for (const std::string& name : entry.names) {
      if (name == cmd) return entry.run(args);
    }
  }
  std::cerr << "dlaunch: unknown command '" << cmd << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace dlaunch
