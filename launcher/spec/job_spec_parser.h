// Parses job.yaml into a validated JobSpec; every problem is reported as FILE:LINE:COL: message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "launcher/spec/job_spec.h"

namespace dlaunch {

// Parses YAML text. `file_name` is used in error positions. On failure the status is
// InvalidArgument and its message holds every problem found, one per line, each as
// "FILE:LINE:COL: message" (unknown keys carry a "did you mean 'x'?" suggestion).
absl::StatusOr<JobSpec> ParseJobSpec(const std::string& yaml_text, const std::string& file_name);

// Reads and parses a file (NotFound when it cannot be read).
absl::StatusOr<JobSpec> LoadJobSpec(const std::string& path);

// The resolved job as YAML (every field, defaults filled in), for `dlaunch validate` and
// for the job directory's resolved-spec file. Parsing it again yields an equal JobSpec.
std::string ResolvedJobYaml(const JobSpec& spec);

// Checks a spec built from command-line flags (same rules as the YAML path, no positions).
absl::Status ValidateJobSpec(const JobSpec& spec);

// Durations as job.yaml writes them: a number of seconds (30, "0.5") or numbers with units,
// possibly several ("250ms", "30s", "5m", "1h", "1h30m"). InvalidArgument otherwise.
absl::StatusOr<double> ParseDuration(std::string_view text);

// A short text that ParseDuration reads back as exactly `seconds` ("250ms", "30s", "5m",
// "1.5s"); used by ResolvedJobYaml and in messages.
std::string FormatDuration(double seconds);

// Scheduler walltime: "HH:MM:SS", "MM:SS", "D-HH:MM:SS", whole minutes ("90", as PBS, Cobalt
// and Slurm all read a bare number), or a duration with units ("2h"). Returns whole seconds.
absl::StatusOr<int> ParseJobWalltime(std::string_view text);

// "HH:MM:SS" (hours may exceed 99), the form every supported scheduler accepts.
std::string FormatWalltime(int seconds);

// Splits a one-line command into argv the way a POSIX shell splits words (single and double
// quotes, backslash escapes), without running a shell: pipes, redirections, `;`, `&` and `$`
// expansions are refused with a message rather than passed on as literal arguments.
absl::StatusOr<std::vector<std::string>> SplitCommandLine(std::string_view text);

}  // namespace dlaunch
