// Value rules of a JobSpec (ranges, names, cross-field limits), shared by the YAML parser, which
// places each problem at its key's position, and ValidateJobSpec for command-line jobs.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "launcher/spec/job_spec.h"
#include "launcher/spec/names.h"

namespace dlaunch {

struct SpecProblem {
  std::string path;     // the key it concerns, e.g. "rendezvous.port", "hosts[2]", "env.FOO"
  std::string message;  // complete sentence fragment naming the key, e.g. "... got 70000"
};

// Every problem with the values of `spec`, in schema order.
std::vector<SpecProblem> CheckJobSpec(const JobSpec& spec);

// Checks a spec built from command-line flags (same rules as the YAML path, no positions).
absl::Status ValidateJobSpec(const JobSpec& spec);

}  // namespace dlaunch
