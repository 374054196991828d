// Parses job.yaml into a validated JobSpec; every problem is reported as FILE:LINE:COL: message.
// Also includes the spec's scalar forms, checks and resolved YAML, so one include serves callers.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "launcher/spec/job_spec.h"
#include "launcher/spec/job_spec_checks.h"
#include "launcher/spec/resolved_job_yaml.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {

// Parses YAML text. `file_name` is used in error positions. On failure the status is
// InvalidArgument and its message holds every problem found, one per line, each as
// "FILE:LINE:COL: message" (unknown keys carry a "did you mean 'x'?" suggestion).
absl::StatusOr<JobSpec> ParseJobSpec(const std::string& yaml_text, const std::string& file_name);

// Reads and parses a file (NotFound when it cannot be read).
absl::StatusOr<JobSpec> LoadJobSpec(const std::string& path);

}  // namespace dlaunch
