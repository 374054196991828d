// What `dlaunch run X ...` means by its first argument X: a job.yaml, or, as torchrun takes it,
// the training program (a Python script, or any executable) whose arguments follow it.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace dlaunch {

enum class RunTargetKind {
  kJobSpec,       // X is a job.yaml: the flags after it are dlaunch's
  kPythonScript,  // X is run as `python3 X args...`
  kProgram,       // X is run as `X args...`
};

// Decides by name first, then by content, in this order:
//   *.yaml, *.yml                          a job spec (a missing one is reported when loaded)
//   *.py                                   a Python script; it must exist
//   an executable file, or a bare name
//   found on `path_var` (as execvp does)   a program
//   another file holding a YAML mapping    a job spec
// Anything else is InvalidArgument in one line that gives the form to use instead: a file that
// is none of these (which interpreter would run it?), a directory, a name that is nowhere.
absl::StatusOr<RunTargetKind> ClassifyRunTarget(const std::string& target,
                                                const std::string& path_var);

}  // namespace dlaunch
