// ResolvedJobYaml: the job as it will run, every default written out, in job.yaml's own schema.
#pragma once

#include <string>

#include "launcher/spec/job_spec.h"

namespace dlaunch {

// The resolved job as YAML (every field, defaults filled in), for `dlaunch validate` and
// for the job directory's resolved-spec file. Parsing it again yields an equal JobSpec.
std::string ResolvedJobYaml(const JobSpec& spec);

}  // namespace dlaunch
