// Value rules of a JobSpec (ranges, names, cross-field limits), shared by the YAML parser, which
// places each problem at its key's position, and ValidateJobSpec for command-line jobs.
#pragma once

#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"

namespace dlaunch {

struct SpecProblem {
  std::string path;     // the key it concerns, e.g. "rendezvous.port", "hosts[2]", "env.FOO"
  std::string message;  // complete sentence fragment naming the key, e.g. "... got 70000"
};

// Every problem with the values of `spec`, in schema order.
std::vector<SpecProblem> CheckJobSpec(const JobSpec& spec);

// The values job.yaml accepts for `launcher:` and `scheduler.type:`.
const std::vector<std::string>& NodeLauncherNames();
const std::vector<std::string>& SchedulerTypeNames();

}  // namespace dlaunch
