// job.yaml: parse and validate; a spec that parses must validate, and its resolved YAML (what
// `dlaunch validate` prints and the job directory keeps) must parse back to the same spec.
#include <string>

#include "launcher/spec/job_spec_parser.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dlaunch::JobSpec> spec = dlaunch::ParseJobSpec(text, "job.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument,
               spec.status().ToString());
    FUZZ_CHECK(spec.status().message().rfind("job.yaml:", 0) == 0, spec.status().ToString());
    return 0;
  }
  const absl::Status valid = dlaunch::ValidateJobSpec(*spec);
  FUZZ_CHECK(valid.ok(), valid.ToString());
  const std::string resolved = dlaunch::ResolvedJobYaml(*spec);
  absl::StatusOr<dlaunch::JobSpec> again = dlaunch::ParseJobSpec(resolved, "resolved.yaml");
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n--- resolved:\n" + resolved);
  const std::string resolved_again = dlaunch::ResolvedJobYaml(*again);
  FUZZ_CHECK(resolved_again == resolved,
             "--- resolved:\n" + resolved + "--- parsed back and resolved:\n" + resolved_again);
  return 0;
}
