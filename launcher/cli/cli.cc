#include "launcher/cli/cli.h"

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/did_you_mean.h"
#include "common/exit_codes.h"
#include "launcher/cli/build_info.h"
#include "launcher/cli/job_commands.h"
#include "launcher/cli/run_command.h"
#include "launcher/cli/validate_command.h"
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
    "  run [options] job.yaml|train.py|-- cmd  run a job now: in this allocation, or on this machine\n"
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
    "  version                                  print the version, commit and LibTorch\n"
    "  help [COMMAND]                           this text, or a command's own help\n"
    "\n"
    "`dlaunch help run` lists the run options. Exit codes: 0 success, 1 job failed,\n"
    "2 bad usage or invalid job.yaml, 3 scheduler or launch error, 130 interrupted.\n";

using Command = std::function<int(const std::vector<std::string>& args)>;

int PrintVersion(const std::vector<std::string>&) {
  std::cout << VersionText();
  return kExitOk;
}

int PrintHelp(const std::vector<std::string>& args);

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
      {{"help", "-h", "--help"}, PrintHelp},
  };
  return *commands;
}

const CommandEntry* FindCommand(const std::string& name) {
  for (const CommandEntry& entry : Commands()) {
    for (const std::string& n : entry.names) {
      if (n == name) return &entry;
    }
  }
  return nullptr;
}

// `dlaunch help` is the list of commands; `dlaunch help run` is what `dlaunch run --help` says.
int PrintHelp(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cout << kUsage;
    return kExitOk;
  }
  const CommandEntry* entry = FindCommand(args[0]);
  if (entry == nullptr || args.size() > 1) {
    std::string near = ClosestMatch(args[0], CommandNames());
    std::cerr << "dlaunch help: " << (entry == nullptr ? "no command '" + args[0] + "'"
                                                       : "give one command")
              << (entry == nullptr && !near.empty() ? " (did you mean '" + near + "'?)" : "")
              << "\n\n" << kUsage;
    return kExitUsage;
  }
  if (entry->names[0] == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  return entry->run({"--help"});
}

}  // namespace

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const CommandEntry& entry : Commands()) names.push_back(entry.names[0]);
  return names;
}

std::string VersionText() {
  // One line: benchmarks and bug reports quote it within a line of their own.
  return absl::StrCat("dlaunch ", kDlaunchVersion, " (commit ", kBuildCommit, ", ",
                      kBuildLibTorch[0] != '\0'
                          ? absl::StrCat("dlaunch-worker on LibTorch ", kBuildLibTorch)
                          : std::string("dlaunch-worker not built"),
                      ")\n");
}

int RunCli(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (const CommandEntry* entry = FindCommand(cmd)) return entry->run(args);
  if (std::string near = ClosestMatch(cmd, CommandNames()); !near.empty()) {
    std::cerr << "dlaunch: unknown command '" << cmd << "' (did you mean '" << near
              << "'?); `dlaunch help` lists the commands\n";
  } else {
    std::cerr << "dlaunch: unknown command '" << cmd << "'\n\n" << kUsage;
  }
  return kExitUsage;
}

}  // namespace dlaunch
