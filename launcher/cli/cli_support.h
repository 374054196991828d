// What the job subcommands (script, submit, status, logs, cancel) share: --help, usage errors
// with the exit code, and parsing their few flags through common/flags.
#pragma once

#include <string>
#include <vector>

#include "common/flags.h"

namespace dlaunch {

// True when -h or --help is anywhere in args (it wins over every other problem).
bool WantsHelp(const std::vector<std::string>& args);

// Prints "dlaunch: <problem>" (when given) and the usage to stderr; returns kExitUsage.
int UsageError(const char* usage, const std::string& problem);

// Parses args with `table`, allowing at most `max_positional` positional arguments. On a problem
// prints it with the usage and returns false with *exit_code = kExitUsage.
bool ParseCommandFlags(const std::vector<std::string>& args, const std::vector<Flag>& table,
                       size_t max_positional, const char* usage, ParsedArgs* parsed,
                       int* exit_code);

// For a command that takes exactly one JOB (a job id or a job directory) besides `table`'s flags:
// parses args and resolves the job's directory into *job_dir. On a problem (a bad flag, no job
// given, a job that cannot be found) prints it and returns false with *exit_code = kExitUsage.
bool ParseJobCommand(const std::vector<std::string>& args, const std::vector<Flag>& table,
                     const char* usage, std::string* job_dir, int* exit_code);

// `path` made absolute against the current directory, normalised.
std::string AbsolutePath(const std::string& path);

}  // namespace dlaunch
