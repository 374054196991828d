// Parses job.yaml into a validated JobSpec; every problem is reported as FILE:LINE:COL: message.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "launcher/job_spec.h"

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

}  // namespace dlaunch
